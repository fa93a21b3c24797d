/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tap_child.c -- test points run in a new process. See tap_child.h.
 */
#define _GNU_SOURCE /* strsignal, setgroups */
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "tap_child.h"

extern char **environ;

static const char *phase_now;
static char self_exe[PATH_MAX];

const char *tap_child_init(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--phase") == 0)
        phase_now = argv[2];
    return phase_now;
}

int tap_in_phase(const char *name)
{
    return phase_now != NULL && strcmp(phase_now, name) == 0;
}

const char *tap_self_exe(void)
{
    if (self_exe[0] == '\0') {
        /* readlink, not exec of /proc/self/exe itself: under valgrind the
         * link names the program, while exec would start valgrind's tool. */
        ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
        if (n <= 0 || (size_t)n >= sizeof self_exe - 1)
            tap_bail("readlink /proc/self/exe failed");
        self_exe[n] = '\0';
    }
    return self_exe;
}

/* Whether environment entry e ("NAME=...") is for the name in change
 * ("NAME=VALUE" or "NAME"). */
static int same_name(const char *e, const char *change)
{
    size_t n = strcspn(change, "=");
    return strncmp(e, change, n) == 0 && e[n] == '=';
}

/* environ with the changes applied and FB_TEST_SEED set to this run's. */
static char **child_environment(const char *const *env, char *seed)
{
    size_t n = 0, nchange = 0;
    while (environ[n] != NULL)
        n++;
    while (env != NULL && env[nchange] != NULL)
        nchange++;
    char **out = calloc(n + nchange + 2, sizeof *out);
    if (out == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int drop = same_name(environ[i], seed);
        for (size_t c = 0; !drop && c < nchange; c++)
            drop = same_name(environ[i], env[c]);
        if (!drop)
            out[k++] = environ[i];
    }
    for (size_t c = 0; c < nchange; c++)
        if (strchr(env[c], '=') != NULL)
            out[k++] = (char *)env[c];
    out[k++] = seed;
    out[k] = NULL;
    return out;
}

/* Relay one line of the child's output; counts its points and failures,
 * notes its plan. */
static void relay(const char *phase, char *line, int *points, int *failed,
                  long *plan, int *bailed)
{
    line[strcspn(line, "\n")] = '\0';
    char *rest;
    if (strncmp(line, "not ok", 6) == 0) {
        rest = strstr(line, " - ");
        (*points)++, (*failed)++;
        tap_ok(0, "[%s] %s", phase, rest ? rest + 3 : line);
    } else if (strncmp(line, "ok", 2) == 0) {
        (*points)++;
        if ((rest = strstr(line, "# SKIP")) != NULL)
            tap_skip("[%s] %s", phase, rest + 6 + (rest[6] == ' '));
        else {
            rest = strstr(line, " - ");
            tap_ok(1, "[%s] %s", phase, rest ? rest + 3 : line);
        }
    } else if (strncmp(line, "1..", 3) == 0) {
        *plan = strtol(line + 3, &rest, 10);
        if (*plan == 0 && (rest = strstr(line, "# SKIP")) != NULL) {
            /* A child that skips everything counts as one skipped point. */
            (*points)++;
            tap_skip("[%s] %s", phase, rest + 6 + (rest[6] == ' '));
            *plan = 1;
        }
    } else if (strncmp(line, "Bail out!", 9) == 0) {
        *bailed = 1;
        tap_diag("[%s] %s", phase, line);
    } else {
        tap_diag("[%s] %s", phase,
                 strncmp(line, "# ", 2) == 0 ? line + 2 : line);
    }
}

/* uid and gid: the child's ids, or -1 to keep this process's. */
static int run_program(const char *exe, long uid, long gid,
                       const char *phase, const char *const *env,
                       unsigned timeout_s)
{
    char seed[48];
    snprintf(seed, sizeof seed, "FB_TEST_SEED=%llu",
             (unsigned long long)test_seed());
    char **envp = child_environment(env, seed);
    int fds[2];
    if (envp == NULL || pipe(fds) != 0)
        tap_bail("tap_run_program: out of resources");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork failed");
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {(char *)exe, "--phase", (char *)phase, NULL};
        if (gid >= 0 && (setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0))
            printf("Bail out! setgid %ld failed\n", gid);
        else if (uid >= 0 && setuid((uid_t)uid) != 0)
            printf("Bail out! setuid %ld failed\n", uid);
        else {
            alarm(timeout_s); /* kept across execve */
            execve(exe, argv, envp);
            printf("Bail out! execve %s failed\n", exe);
        }
        fflush(stdout);
        _exit(127);
    }
    free(envp);
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    if (in == NULL)
        tap_bail("fdopen failed");
    int points = 0, failed = 0, bailed = 0;
    long plan = -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) >= 0)
        relay(phase, line, &points, &failed, &plan, &bailed);
    free(line);
    fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    char how[128];
    int ended = 0;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        snprintf(how, sizeof how, "timed out after %u s", timeout_s);
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else {
        ended = !bailed && plan == points &&
                (WEXITSTATUS(status) == 0 ||
                 (WEXITSTATUS(status) == 1 && failed > 0));
        snprintf(how, sizeof how, "exit status %d, plan %ld, %d points%s",
                 WEXITSTATUS(status), plan, points,
                 bailed ? ", bailed out" : "");
    }
    tap_ok(ended, "[%s] the child ran to its end (%s)", phase, how);
    return ended && failed == 0;
}

int tap_run_program(const char *exe, const char *phase,
                    const char *const *env, unsigned timeout_s)
{
    return run_program(exe, -1, -1, phase, env, timeout_s);
}

int tap_run_program_as(const char *exe, unsigned uid, unsigned gid,
                       const char *phase, const char *const *env,
                       unsigned timeout_s)
{
    return run_program(exe, uid, gid, phase, env, timeout_s);
}

int tap_rerun(const char *phase, const char *const *env, unsigned timeout_s)
{
    return tap_run_program(tap_self_exe(), phase, env, timeout_s);
}
