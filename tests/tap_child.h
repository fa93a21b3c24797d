/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tap_child.h -- test points that run in a new process, relayed as this
 * program's own.
 *
 * The library reads its environment once per process, so a test of another
 * value of a variable needs a fresh process: the program runs itself again
 * (exec, not fork: a forked child would inherit what the parent already
 * read) with the variable changed and a phase name on its command line,
 * and its main() runs only that phase. The child's TAP points come back
 * through a pipe and are printed as this program's points, so the plan
 * stays right; a child that crashes, hangs past its alarm, bails out or
 * ends before its plan becomes a failed point instead of ending the whole
 * program. The child gets the parent's seed (FB_TEST_SEED).
 */
#ifndef FB_TEST_TAP_CHILD_H
#define FB_TEST_TAP_CHILD_H

/* Call first in main(): remembers how to run this program again, and
 * returns the phase this process was started for ("--phase NAME" as its
 * arguments), or NULL in a normal run. */
const char *tap_child_init(int argc, char **argv);

/* Whether this process runs phase name. */
int tap_in_phase(const char *name);

/* Runs this program again with phase and the environment changed by env
 * (a NULL-terminated list of "NAME=VALUE" to set and "NAME" to unset; env
 * itself may be NULL), killed by SIGALRM after timeout_s seconds, and
 * relays its points. Returns 1 if the child passed every point and ended
 * normally. */
int tap_rerun(const char *phase, const char *const *env, unsigned timeout_s);

/* The same for another executable (exe: its path), given the same
 * "--phase NAME" arguments: for a copy of this program. */
int tap_run_program(const char *exe, const char *phase,
                    const char *const *env, unsigned timeout_s);

/* The same, the child taking the user and group ids uid and gid (and no
 * supplementary groups) before it executes exe: needs root. */
int tap_run_program_as(const char *exe, unsigned uid, unsigned gid,
                       const char *phase, const char *const *env,
                       unsigned timeout_s);

/* The path of this program's executable (resolved from /proc/self/exe). */
const char *tap_self_exe(void);

#endif /* FB_TEST_TAP_CHILD_H */
