/*
 * test_env.c -- the environment variables the library reads.
 *
 * The library reads its environment once per process, so every case runs
 * as a child process started with the environment under test
 * (tap_child.h), under an alarm: a call that hangs is a failed point.
 *  - FUSEDBLAS_CUDA_MODULE naming a relative path, a FIFO, a device file,
 *    a directory or nothing: the CUDA backends are unavailable, promptly,
 *    with a message naming the variable; the CPU still works;
 *  - a secure-execution process (a setuid copy of this program, when the
 *    test runs as root on a file system that honours setuid) ignores the
 *    variables: a FUSEDBLAS_CUDA_MODULE whose constructor leaves a marker
 *    file is not loaded there, while the same copy without setuid, given
 *    the same environment, loads it; FUSEDBLAS_BACKEND=bogus is ignored;
 *  - the variables are read once: changing them after the first call
 *    changes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Child, started setuid: the variables read as unset. */
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
    fb_destroy(h);
}

/* Child, the same copy without setuid and the same environment: the
 * module is read and loaded (it is no CUDA module, so CUDA is then
 * unavailable). */
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

static void secure_execution(void)
{
    const char *why = NULL;
    struct statvfs fs;
    char dir[64] = "", copy[96], markers[96], marker[128];
    if (getuid() != 0)
        why = "not root: cannot make a setuid copy of this program";
    else if (!is_elf(tap_self_exe()))
        why = "this program is not an ELF file (a libtool wrapper?)";
    if (why == NULL) {
        temp_dir(dir, sizeof dir, "secure");
        if (statvfs(dir, &fs) != 0 || (fs.f_flag & ST_NOSUID) != 0)
            why = "/tmp is mounted nosuid";
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
    /* The setuid child runs as nobody: it must reach the copy, and could
     * write the marker if it loaded the module. */
    if (chmod(dir, 0755) != 0 || mkdir(markers, 0700) != 0 ||
        chmod(markers, 01777) != 0 || !copy_file(tap_self_exe(), copy))
        tap_bail("cannot prepare %s: %s", dir, strerror(errno));

    char module[512], mark[160];
    snprintf(module, sizeof module, "FUSEDBLAS_CUDA_MODULE=%s",
             FB_MARKER_MODULE);
    snprintf(mark, sizeof mark, "FB_TEST_MARKER=%s", marker);
    const char *env[] = {module, mark, "FUSEDBLAS_BACKEND=bogus",
                         "FUSEDBLAS_VERBOSE=1", NULL};

    /* The witness that the marker works: without setuid it is loaded. */
    tap_run_program(copy, "insecure", env, CHILD_SECONDS);
    const int loaded_plain = access(marker, F_OK) == 0;
    unlink(marker);
    tap_ok(loaded_plain, "without setuid, FUSEDBLAS_CUDA_MODULE=%s is loaded "
           "(its constructor made %s)", FB_MARKER_MODULE, marker);

    if (chown(copy, 65534, 65534) != 0 || chmod(copy, 04755) != 0)
        tap_bail("cannot make %s setuid: %s", copy, strerror(errno));
    tap_run_program(copy, "secure", env, CHILD_SECONDS);
    const int loaded_secure = access(marker, F_OK) == 0;
    unlink(marker);
    tap_ok(!loaded_secure, "setuid (euid nobody): the same environment's "
           "FUSEDBLAS_CUDA_MODULE is not loaded (%s %s)", marker,
           loaded_secure ? "exists" : "does not exist");
    unlink(copy);
    rmdir(markers);
    rmdir(dir);
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
        else
            tap_bail("unknown phase %s", phase);
        return tap_end();
    }
    module_paths();
    secure_execution();
    const char *cpu[] = {"FUSEDBLAS_BACKEND=cpu", NULL};
    tap_rerun("read-once", cpu, CHILD_SECONDS);
    return tap_end();
}
