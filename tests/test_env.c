/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_env.c -- the environment variables the library reads.
 *
 * The library reads its environment once per process, so every case runs
 * as a child process started with the environment under test
 * (tap_child.h), under an alarm: a call that hangs is a failed point.
 *  - FUSEDBLAS_CUDA_MODULE naming a relative path, a FIFO, a device file,
 *    a directory or nothing: the CUDA backends are unavailable, promptly,
 *    with a message naming the variable; the CPU still works;
 *  - a secure-execution process ignores the variables: when the test
 *    runs as root on a file system that honours setuid, a setuid-root
 *    copy of this program started by the user nobody (real id nobody,
 *    effective id root: AT_SECURE) does not load a FUSEDBLAS_CUDA_MODULE
 *    whose constructor leaves a marker file, while the same copy without
 *    setuid, run by root with the same environment, loads it;
 *    FUSEDBLAS_BACKEND=bogus is ignored there, and so is
 *    FUSEDBLAS_NCCL_LIBRARY naming the marker module (fb_set_nccl_comm
 *    neither loads nor names it);
 *  - a value outside a variable's set (FUSEDBLAS_BACKEND,
 *    FUSEDBLAS_VERBOSE, FUSEDBLAS_CPU_SGEMM, FUSEDBLAS_CPU_NO_BF16,
 *    FUSEDBLAS_CPU_NO_AMX) runs
 *    nothing: fb_create fails, every call on a default handle fails, each
 *    with INVALID_ARGUMENT at position 0 and a message naming the
 *    variable and its value; every valid value (and the empty string)
 *    is accepted;
 *  - the variables are read once: changing them after the first call
 *    changes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "harness.h"
#include "tap_child.h"

#ifndef FB_MARKER_MODULE
#error "FB_MARKER_MODULE: the path of the build tree's marker module"
#endif

/* Seconds a child may take: its calls are tiny. */
#define CHILD_SECONDS 30

static fb_status small_sgemm(fb_handle h, float c[4])
{
    static const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2, 2,
                          1.0f, a, 2, b, 2, 0.0f, c, 2, NULL, FB_ACT_NONE);
}

static int sgemm_right(const float c[4])
{
    return c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4;
}

static int untouched(const float c[4])
{
    return c[0] == -7 && c[1] == -7 && c[2] == -7 && c[3] == -7;
}

/* ---- FUSEDBLAS_CUDA_MODULE refused ---------------------------------------- */

/* Child: the module path is one the loader must refuse, for the reason in
 * FB_TEST_EXPECT. */
static void module_refused(void)
{
    const char *want = getenv("FB_TEST_EXPECT");
    const char *path = getenv("FUSEDBLAS_CUDA_MODULE");
    if (want == NULL || path == NULL)
        tap_bail("FB_TEST_EXPECT or FUSEDBLAS_CUDA_MODULE unset");
    const fb_status cuda = fb_backend_available(FB_BACKEND_CUDA);
    const fb_status lt = fb_backend_available(FB_BACKEND_CUDA_LT);
    tap_ok(cuda == FB_STATUS_BACKEND_UNAVAILABLE &&
               lt == FB_STATUS_BACKEND_UNAVAILABLE,
           "FUSEDBLAS_CUDA_MODULE='%s': fb_backend_available(cuda) %s, "
           "(cuda-lt) %s", path, fb_status_string(cuda),
           fb_status_string(lt));

    fb_handle h = handle_on(FB_BACKEND_CUDA_LT);
    float c[4] = {-7, -7, -7, -7};
    fb_status st = small_sgemm(h, c);
    const char *msg = fb_handle_last_message(h);
    tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE &&
               strstr(msg, "FUSEDBLAS_CUDA_MODULE") != NULL &&
               strstr(msg, want) != NULL && untouched(c),
           "a cuda-lt sgemm_bias_act: %s, C untouched, message names the "
           "variable and says \"%s\": \"%s\"", fb_status_string(st), want,
           msg);
    float d[4] = {-7, -7, -7, -7};
    st = fb_set_backend(h, FB_BACKEND_CPU);
    st = st == FB_STATUS_SUCCESS ? small_sgemm(h, d) : st;
    tap_ok(st == FB_STATUS_SUCCESS && sgemm_right(d),
           "the same handle on the cpu backend: %s", fb_status_string(st));
    fb_destroy(h);
}

/* A temporary directory; bails out if none can be made. */
static void temp_dir(char *dir, size_t len, const char *what)
{
    snprintf(dir, len, "/tmp/fb-test-env-%s.XXXXXX", what);
    if (mkdtemp(dir) == NULL)
        tap_bail("mkdtemp: %s", strerror(errno));
}

static void module_paths(void)
{
    char dir[64], fifo[96], missing[96], expect_missing[128];
    temp_dir(dir, sizeof dir, "module");
    snprintf(fifo, sizeof fifo, "%s/fifo.so", dir);
    snprintf(missing, sizeof missing, "%s/missing.so", dir);
    snprintf(expect_missing, sizeof expect_missing, "%s", strerror(ENOENT));
    if (mkfifo(fifo, 0600) != 0)
        tap_bail("mkfifo: %s", strerror(errno));
    const struct {
        const char *path, *expect;
    } cases[] = {
        {"fusedblas_cuda.so", "is not an absolute path"},
        {"lib/cuda/.libs/fusedblas_cuda.so", "is not an absolute path"},
        {fifo, "is not a regular file"},
        {"/dev/null", "is not a regular file"},
        {"/dev/zero", "is not a regular file"},
        {dir, "is not a regular file"},
        {missing, expect_missing},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char var[160], expect[160];
        snprintf(var, sizeof var, "FUSEDBLAS_CUDA_MODULE=%s", cases[i].path);
        snprintf(expect, sizeof expect, "FB_TEST_EXPECT=%s", cases[i].expect);
        const char *env[] = {var, expect, NULL};
        tap_rerun("module-refused", env, CHILD_SECONDS);
    }
    unlink(fifo);
    rmdir(dir);
}

/* ---- secure execution ------------------------------------------------------ */

/* Child, started setuid-root by nobody: the variables read as unset. */
static void secure_child(void)
{
    tap_ok(getuid() != geteuid(), "runs setuid: uid %d, euid %d",
           (int)getuid(), (int)geteuid());
    fb_handle h = NULL;
    fb_backend b = (fb_backend)-1;
    fb_status st = fb_create(&h);
    if (st == FB_STATUS_SUCCESS)
        st = fb_get_backend(h, &b);
    tap_ok(st == FB_STATUS_SUCCESS && b == FB_BACKEND_AUTO,
           "FUSEDBLAS_BACKEND=bogus is ignored: fb_create and fb_get_backend "
           "%s, backend %s", fb_status_string(st),
           fb_backend_name(b));
    /* What would load FUSEDBLAS_CUDA_MODULE if it were read. */
    const fb_status cuda = fb_backend_available(FB_BACKEND_CUDA);
    float c[4] = {-7, -7, -7, -7};
    st = small_sgemm(h, c);
    tap_ok(st == FB_STATUS_SUCCESS && sgemm_right(c),
           "a call runs (on the %s backend); fb_backend_available(cuda) "
           "said %s", fb_backend_name(fb_handle_last_backend(h)),
           fb_status_string(cuda));
    /* What would load FUSEDBLAS_NCCL_LIBRARY if it were read. The
     * communicator is zeroed memory larger than NCCL's, which an NCCL
     * found instead refuses (or counts 0 ranks in): never read past. */
    void *comm = mmap(NULL, (size_t)16 << 20, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (comm == MAP_FAILED)
        tap_bail("mmap failed");
    st = fb_set_nccl_comm(h, comm);
    const char *msg = fb_handle_last_message(h);
    tap_ok(strstr(msg, "FUSEDBLAS_NCCL_LIBRARY") == NULL &&
               strstr(msg, FB_MARKER_MODULE) == NULL,
           "FUSEDBLAS_NCCL_LIBRARY is ignored: fb_set_nccl_comm %s: %s",
           fb_status_string(st), msg);
    fb_set_nccl_comm(h, NULL);
    munmap(comm, (size_t)16 << 20);
    fb_destroy(h);
}

/* Child, the same copy without setuid, run by root with the same
 * environment: the module is read and loaded (it is no CUDA module, so
 * CUDA is then unavailable). */
static void insecure_child(void)
{
    tap_ok(getuid() == geteuid(), "runs without setuid: uid %d, euid %d",
           (int)getuid(), (int)geteuid());
    const fb_status cuda = fb_backend_available(FB_BACKEND_CUDA);
    tap_ok(cuda == FB_STATUS_BACKEND_UNAVAILABLE,
           "fb_backend_available(cuda) with the marker module: %s",
           fb_status_string(cuda));
}

/* Copies file from to to, mode 0755. */
static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    int ok = in >= 0 && out >= 0;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof buf)) != 0) {
        ok = n > 0 && write(out, buf, (size_t)n) == n;
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        ok &= close(out) == 0;
    return ok;
}

static int is_elf(const char *path)
{
    unsigned char magic[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && read(fd, magic, 4) == 4 &&
             memcmp(magic, "\177ELF", 4) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Whether the process runs with no_new_privs, under which an execve of a
 * setuid program does not change its ids. */
static int no_new_privs(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int set = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "NoNewPrivs:", 11) == 0)
            set = atoi(line + 11) != 0;
    if (f != NULL)
        fclose(f);
    return set;
}

static void secure_execution(void)
{
    const char *why = NULL;
    struct statvfs fs;
    char dir[64] = "", copy[96], markers[96], marker[128];
    if (getuid() != 0)
        why = "not root: cannot make a setuid copy of this program";
    else if (no_new_privs())
        why = "no_new_privs is set: a setuid program would not change ids";
    else if (!is_elf(tap_self_exe()))
        why = "this program is not an ELF file (a libtool wrapper?)";
    if (why == NULL) {
        temp_dir(dir, sizeof dir, "secure");
        if (statvfs(dir, &fs) != 0 ||
            (fs.f_flag & (ST_NOSUID | ST_NOEXEC)) != 0)
            why = "/tmp is mounted nosuid or noexec";
    }
    if (why != NULL) {
        tap_skip("secure execution: %s", why);
        tap_skip("secure execution: %s", why);
        if (dir[0] != '\0')
            rmdir(dir);
        return;
    }
    snprintf(copy, sizeof copy, "%s/test_env", dir);
    snprintf(markers, sizeof markers, "%s/markers", dir);
    snprintf(marker, sizeof marker, "%s/loaded", markers);
    /* nobody starts the copy: it must reach it. Run as root (effective),
     * the copy reads the build tree wherever it is. */
    if (chmod(dir, 0755) != 0 || mkdir(markers, 0700) != 0 ||
        !copy_file(tap_self_exe(), copy))
        tap_bail("cannot prepare %s: %s", dir, strerror(errno));

    char module[512], nccl[512], mark[160];
    snprintf(module, sizeof module, "FUSEDBLAS_CUDA_MODULE=%s",
             FB_MARKER_MODULE);
    snprintf(nccl, sizeof nccl, "FUSEDBLAS_NCCL_LIBRARY=%s",
             FB_MARKER_MODULE);
    snprintf(mark, sizeof mark, "FB_TEST_MARKER=%s", marker);
    const char *env[] = {module, nccl, mark, "FUSEDBLAS_BACKEND=bogus",
                         "FUSEDBLAS_VERBOSE=1", NULL};

    /* The witness that the marker works: without setuid it is loaded. */
    tap_run_program(copy, "insecure", env, CHILD_SECONDS);
    const int loaded_plain = access(marker, F_OK) == 0;
    unlink(marker);
    tap_ok(loaded_plain, "without setuid, FUSEDBLAS_CUDA_MODULE=%s is loaded "
           "(its constructor made %s)", FB_MARKER_MODULE, marker);

    if (chmod(copy, 04755) != 0)
        tap_bail("cannot make %s setuid: %s", copy, strerror(errno));
    tap_run_program_as(copy, 65534, 65534, "secure", env, CHILD_SECONDS);
    const int loaded_secure = access(marker, F_OK) == 0;
    unlink(marker);
    tap_ok(!loaded_secure, "setuid root, started by nobody: the same "
           "environment's FUSEDBLAS_CUDA_MODULE and FUSEDBLAS_NCCL_LIBRARY "
           "are not loaded (%s %s)",
           marker, loaded_secure ? "exists" : "does not exist");
    unlink(copy);
    rmdir(markers);
    rmdir(dir);
}

/* ---- values outside a variable's set --------------------------------------------- */

/* A call on the NULL default handle from another thread. */
static void *other_thread(void *arg)
{
    float *c = arg;
    return (void *)(intptr_t)small_sgemm(NULL, c);
}

/* The first characters of value, anything unprintable as '?' (as the
 * library shows a value). */
static const char *shown(const char *value)
{
    static char out[24];
    size_t n = 0;
    for (; value[n] != '\0' && n < sizeof out - 1; n++)
        out[n] = value[n] >= 0x20 && value[n] < 0x7f ? value[n] : '?';
    out[n] = '\0';
    return out;
}

/* Whether the default handle's record is the environment's failure:
 * INVALID_ARGUMENT at position 0, a message naming var and its value. */
static int env_failure_recorded(const char *var, const char *value)
{
    const char *msg = fb_handle_last_message(NULL);
    return fb_handle_last_status(NULL) == FB_STATUS_INVALID_ARGUMENT &&
           fb_handle_last_arg(NULL) == 0 && strstr(msg, var) != NULL &&
           strstr(msg, shown(value)) != NULL;
}

/* Child, started with the variable named by FB_TEST_BAD set to a value
 * outside its set: nothing runs, and every failure says why. */
static void bad_value(void)
{
    const char *var = getenv("FB_TEST_BAD");
    const char *value = var ? getenv(var) : NULL;
    if (value == NULL)
        tap_bail("FB_TEST_BAD or the variable it names is unset");

    fb_handle h = (fb_handle)&h; /* must stay unwritten */
    fb_status st = fb_create(&h);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && h == (fb_handle)&h &&
               env_failure_recorded(var, value),
           "%s='%s': fb_create %s, no handle written; on the default "
           "handle: argument %d, \"%s\"", var, shown(value),
           fb_status_string(st),
           fb_handle_last_arg(NULL), fb_handle_last_message(NULL));

    float c[4] = {-7, -7, -7, -7};
    st = small_sgemm(NULL, c);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && untouched(c) &&
               env_failure_recorded(var, value),
           "sgemm_bias_act on the NULL handle: %s, C untouched, the message "
           "names the variable", fb_status_string(st));

    float x[4] = {1, 1, 1, 1}, w[4] = {1, 1, 1, 1}, y[2] = {-7, -7};
    st = mlp_geglu_forward(NULL, FB_DTYPE_F32, FB_ACT_GELU_TANH, 1, 2, 2, 2,
                           x, 2, w, NULL, w, NULL, w, NULL, y, 2);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && y[0] == -7 && y[1] == -7 &&
               env_failure_recorded(var, value),
           "mlp_geglu_forward on the NULL handle: %s, Y untouched",
           fb_status_string(st));

    /* Settings cannot make the default handle usable: the environment is
     * read once, so it keeps failing. */
    const fb_status set = fb_set_backend(NULL, FB_BACKEND_CPU);
    const fb_status threads = fb_set_threads(NULL, 1);
    st = small_sgemm(NULL, c);
    const fb_status again = fb_create(&h);
    tap_ok(set == FB_STATUS_INVALID_ARGUMENT &&
               threads == FB_STATUS_INVALID_ARGUMENT &&
               st == FB_STATUS_INVALID_ARGUMENT &&
               again == FB_STATUS_INVALID_ARGUMENT && untouched(c) &&
               env_failure_recorded(var, value),
           "fb_set_backend(NULL, cpu) %s, fb_set_threads(NULL, 1) %s, then "
           "sgemm_bias_act %s, fb_create %s", fb_status_string(set),
           fb_status_string(threads), fb_status_string(st),
           fb_status_string(again));

    pthread_t t;
    void *ret = NULL;
    float d[4] = {-7, -7, -7, -7};
    if (pthread_create(&t, NULL, other_thread, d) != 0 ||
        pthread_join(t, &ret) != 0)
        tap_bail("pthread_create failed");
    st = (fb_status)(intptr_t)ret;
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && untouched(d),
           "another thread's default handle: sgemm_bias_act %s",
           fb_status_string(st));
}

/* Child, started with valid values: FB_TEST_BACKEND names the backend a
 * new handle must get. */
static void good_values(void)
{
    const char *want = getenv("FB_TEST_BACKEND");
    if (want == NULL)
        tap_bail("FB_TEST_BACKEND unset");
    fb_handle h = NULL;
    fb_backend b = (fb_backend)-1;
    fb_status st = fb_create(&h);
    if (st == FB_STATUS_SUCCESS)
        st = fb_get_backend(h, &b);
    tap_ok(st == FB_STATUS_SUCCESS && strcmp(fb_backend_name(b), want) == 0,
           "FUSEDBLAS_BACKEND='%s' VERBOSE='%s' CPU_SGEMM='%s' "
           "CPU_NO_BF16='%s': fb_create %s, backend %s (want %s)",
           getenv("FUSEDBLAS_BACKEND"), getenv("FUSEDBLAS_VERBOSE"),
           getenv("FUSEDBLAS_CPU_SGEMM"), getenv("FUSEDBLAS_CPU_NO_BF16"),
           fb_status_string(st), fb_backend_name(b), want);
    float c[4] = {-7, -7, -7, -7};
    st = fb_set_backend(h, FB_BACKEND_CPU);
    st = st == FB_STATUS_SUCCESS ? small_sgemm(h, c) : st;
    float d[4] = {-7, -7, -7, -7};
    const fb_status on_default = fb_set_backend(NULL, FB_BACKEND_CPU) ==
                                         FB_STATUS_SUCCESS
                                     ? small_sgemm(NULL, d)
                                     : FB_STATUS_INTERNAL;
    tap_ok(st == FB_STATUS_SUCCESS && sgemm_right(c) &&
               on_default == FB_STATUS_SUCCESS && sgemm_right(d),
           "a cpu call on the handle %s, on the NULL handle %s",
           fb_status_string(st), fb_status_string(on_default));
    fb_destroy(h);
}

static void values(void)
{
    static const char *const bad[][2] = {
        {"FUSEDBLAS_BACKEND", "cdua"},
        {"FUSEDBLAS_BACKEND", "CPU"},
        {"FUSEDBLAS_BACKEND", "cpu "},
        {"FUSEDBLAS_BACKEND", "auto\n"},
        {"FUSEDBLAS_BACKEND", "cuda-lt-and-a-value-much-longer-than-a-line-"
                              "of-the-message-has-room-for-in-it"},
        {"FUSEDBLAS_VERBOSE", "yes"},
        {"FUSEDBLAS_VERBOSE", "2"},
        {"FUSEDBLAS_CPU_SGEMM", "fast"},
        {"FUSEDBLAS_CPU_SGEMM", "OpenBLAS"},
        {"FUSEDBLAS_CPU_NO_BF16", "true"},
        {"FUSEDBLAS_CPU_NO_AMX", "on"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char set[160], which[64];
        snprintf(set, sizeof set, "%s=%s", bad[i][0], bad[i][1]);
        snprintf(which, sizeof which, "FB_TEST_BAD=%s", bad[i][0]);
        const char *env[] = {set, which, NULL};
        tap_rerun("bad-value", env, CHILD_SECONDS);
    }
    /* Every name of every variable, and the empty string (unset). */
    static const char *const good[][5] = {
        /* backend, verbose, cpu_sgemm, cpu_no_bf16, backend expected */
        {"cpu", "0", "auto", "0", "cpu"},
        {"cuda", "1", "own", "1", "cuda"},
        {"cuda-lt", "", "packed", "", "cuda-lt"},
        {"cuda-fused", "0", "openblas", "1", "cuda-fused"},
        {"auto", "0", "", "0", "auto"},
        {"", "", "", "", "auto"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char v[5][64];
        snprintf(v[0], sizeof v[0], "FUSEDBLAS_BACKEND=%s", good[i][0]);
        snprintf(v[1], sizeof v[1], "FUSEDBLAS_VERBOSE=%s", good[i][1]);
        snprintf(v[2], sizeof v[2], "FUSEDBLAS_CPU_SGEMM=%s", good[i][2]);
        snprintf(v[3], sizeof v[3], "FUSEDBLAS_CPU_NO_BF16=%s", good[i][3]);
        snprintf(v[4], sizeof v[4], "FB_TEST_BACKEND=%s", good[i][4]);
        const char *env[] = {v[0], v[1], v[2], v[3], v[4], NULL};
        tap_rerun("good-values", env, CHILD_SECONDS);
    }
}

/* ---- read once ---------------------------------------------------------------- */

/* Child, started with FUSEDBLAS_BACKEND=cpu: a handle made after the
 * variable changes still gets cpu. */
static void read_once(void)
{
    fb_handle h1 = handle_on(FB_BACKEND_AUTO), h2 = NULL;
    fb_destroy(h1);
    if (setenv("FUSEDBLAS_BACKEND", "cuda-lt", 1) != 0)
        tap_bail("setenv failed");
    fb_backend b = (fb_backend)-1;
    fb_status st = fb_create(&h2);
    if (st == FB_STATUS_SUCCESS)
        st = fb_get_backend(h2, &b);
    tap_ok(st == FB_STATUS_SUCCESS && b == FB_BACKEND_CPU,
           "FUSEDBLAS_BACKEND changed from cpu to cuda-lt after the first "
           "call: a new handle still gets %s (%s)", fb_backend_name(b),
           fb_status_string(st));
    fb_destroy(h2);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_env");
    if (phase != NULL) {
        if (tap_in_phase("module-refused"))
            module_refused();
        else if (tap_in_phase("secure"))
            secure_child();
        else if (tap_in_phase("insecure"))
            insecure_child();
        else if (tap_in_phase("read-once"))
            read_once();
        else if (tap_in_phase("bad-value"))
            bad_value();
        else if (tap_in_phase("good-values"))
            good_values();
        else
            tap_bail("unknown phase %s", phase);
        return tap_end();
    }
    module_paths();
    secure_execution();
    values();
    const char *cpu[] = {"FUSEDBLAS_BACKEND=cpu", NULL};
    tap_rerun("read-once", cpu, CHILD_SECONDS);
    return tap_end();
}
