/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_gemm.c -- the libFuzzer harness: bytes -> one call of
 * sgemm/hgemm/bgemm_bias_act or mlp_geglu_forward on the CPU backend ->
 * either a valid status with every output element as the oracle says
 * (fuzz_judge.c) and nothing else touched, or the error status and
 * argument position the documentation gives (fuzz_model.c) with every
 * output byte untouched. Any disagreement aborts, so libFuzzer keeps the
 * input; ASan and UBSan watch the library meanwhile.
 *
 * Input layout (bytes past the end read as 0):
 *   0  routine: 0 sgemm, 1 hgemm, 2 bgemm, 3 mlp
 *   1  flags. gemm: bit 0 column-major, bits 1-2 transa, bits 3-4 transb
 *      (no, trans, conj-trans, trans), bit 5 bias. mlp: bits 0-1 dtype
 *      (f32, f16, bf16, f32), bits 2-4 bg, bu, bd. Both: bit 6 the NULL
 *      (default) handle instead of our own, bit 7 bad-argument mode.
 *   2  activation (mod 5)            3  value distribution (fuzz_data.h)
 *   4-7  sizes mod 41: m n k (gemm), m k h n (mlp)
 *   8-10 leading-dimension padding mod 6: lda ldb ldc (gemm), ldx ldy (mlp)
 *   11, 12  alpha, beta codes (gemm)
 *   13, 14  bad mode: the argument position to spoil and how; if bit 7 of
 *           14 is set, 15 and 16 spoil a second one
 *   then triples (operand, element, special-value code) that place
 *   NaN, Inf, subnormals, ... at chosen elements.
 * tests/fuzz/make_seeds.sh writes the seed corpus in this layout.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_data.h"
#include "fuzz_judge.h"
#include "fuzz_model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DIM 41
#define GUARD 16            /* guard elements on each side of a buffer */
#define REAL_LIMIT (1 << 16) /* larger extents get a stand-in buffer */
#define STANDIN 64          /* elements of a stand-in buffer */

static fb_handle own;   /* our handle, CPU backend */
static fb_handle stale; /* a destroyed handle */

/* ---- what the runs covered, printed at exit ------------------------------ */

static struct {
    long calls, success, invalid, reverted, not_supported;
    long by_kind[4];      /* checked elements by fz_kind */
    long ovf, blas_alpha0;
    long by_arg[18];
    long routine[4];
} stats;

static void print_stats(void)
{
    fprintf(stderr,
            "fuzz_gemm: %ld calls (sgemm %ld, hgemm %ld, bgemm %ld, mlp %ld): "
            "%ld succeeded, %ld invalid argument; %ld spoiled calls made "
            "valid again for want of memory\n",
            stats.calls, stats.routine[0], stats.routine[1], stats.routine[2],
            stats.routine[3], stats.success, stats.invalid, stats.reverted);
    fprintf(stderr,
            "fuzz_gemm: elements checked: %ld within the bound, %ld NaN, "
            "%ld IEEE Inf/NaN/0, %ld unconstrained; %ld with possible fp32 "
            "overflow; %ld alpha == 0 calls with BLAS's unread A and B\n",
            stats.by_kind[FZ_BOUNDED], stats.by_kind[FZ_NAN],
            stats.by_kind[FZ_IEEE], stats.by_kind[FZ_ANY], stats.ovf,
            stats.blas_alpha0);
    fprintf(stderr,
            "fuzz_gemm: %ld valid calls with a size or leading dimension "
            "beyond a 32-bit int declined as not supported\n",
            stats.not_supported);
    fprintf(stderr, "fuzz_gemm: invalid arguments by position:");
    for (int p = 1; p < 18; p++)
        if (stats.by_arg[p])
            fprintf(stderr, " %d:%ld", p, stats.by_arg[p]);
    fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fb_handle dead;
    if (fb_create(&own) != FB_STATUS_SUCCESS ||
        fb_set_backend(own, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
        fb_set_backend(NULL, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
        fb_create(&dead) != FB_STATUS_SUCCESS ||
        fb_destroy(dead) != FB_STATUS_SUCCESS) {
        fprintf(stderr, "fuzz_gemm: cannot set up handles\n");
        abort();
    }
    stale = dead;
    atexit(print_stats);
    return 0;
}

/* ---- operands ----------------------------------------------------------------- */

typedef struct operand {
    const char *name;
    int pos;         /* argument position of its pointer */
    int output;      /* C or Y */
    int present;     /* biases may be absent (NULL by design) */
    int null;        /* passed as NULL (spoiled) */
    int misalign;    /* bytes added to the pointer */
    fz_stored s;     /* window */
    int shaped;      /* s is defined (valid enums, sizes >= 0) */
    int64_t extent;  /* elements; -1 overflow */
    int standin;     /* the buffer is a small stand-in */
    /* the buffer */
    size_t bytes;
    unsigned char *alloc, *before;
    void *data;      /* what the library gets */
    int64_t avail;   /* elements from data on */
    double *img;     /* double image, NaN outside the window */
} operand;

#define MAX_OPS 8

typedef struct call {
    int routine;     /* 0-2 gemm (s, h, b), 3 mlp */
    fb_dtype dtype;
    int use_null_handle;
    int bad_mode;
    fz_gemm g;
    fz_mlp p;
    int64_t pad[3];
    int64_t min_ld[3]; /* max(1, inner) of each strided operand, unspoiled */
    int nops;
    operand op[MAX_OPS];
    int mode;        /* value distribution */
} call;

static operand *find(call *c, int pos)
{
    for (int i = 0; i < c->nops; i++)
        if (c->op[i].pos == pos)
            return &c->op[i];
    return NULL;
}

static void add_op(call *c, const char *name, int pos, int output,
                   int present)
{
    operand *o = &c->op[c->nops++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->pos = pos;
    o->output = output;
    o->present = present;
}

/* ---- decoding ------------------------------------------------------------------ */

static const fb_transpose trans_of[4] = {FB_NO_TRANS, FB_TRANS,
                                         FB_CONJ_TRANS, FB_TRANS};

static int64_t bad_dim(int how)
{
    static const int64_t v[] = {-1, -1000, INT64_MIN, (int64_t)1 << 40,
                                (int64_t)1 << 62, INT64_MAX};
    return v[how % 6];
}

static int64_t bad_ld(int how, int64_t rowlen)
{
    switch (how % 7) {
    case 0: return rowlen - 1;
    case 1: return 0;
    case 2: return -1;
    case 3: return INT64_MIN;
    case 4: return (int64_t)1 << 40;
    case 5: return (int64_t)1 << 62;
    default: return INT64_MAX;
    }
}

/* Out-of-range enum values, by how; base is the enum's first value. */
static int bad_enum(int how, int base, int count)
{
    const int v[] = {base - 1, base + count, -1, 1000, INT32_MIN};
    return v[how % 5];
}

static void spoil_pointer(operand *o, int how)
{
    if (o == NULL)
        return;
    if (how % 3 == 0)
        o->null = 1;
    else
        o->misalign = how % 3; /* 1 or 2 bytes: 2 is aligned for 16-bit */
}

static void spoil_gemm(call *c, int pos, int how)
{
    fz_gemm *g = &c->g;
    switch (pos) {
    case 1: g->stale_handle = 1; break;
    case 2: g->layout = (fb_layout)bad_enum(how, FB_ROW_MAJOR, 2); break;
    case 3: g->transa = (fb_transpose)bad_enum(how, FB_NO_TRANS, 3); break;
    case 4: g->transb = (fb_transpose)bad_enum(how, FB_NO_TRANS, 3); break;
    case 5: g->m = bad_dim(how); break;
    case 6: g->n = bad_dim(how); break;
    case 7: g->k = bad_dim(how); break;
    case 10: g->lda = bad_ld(how, c->min_ld[0]); break;
    case 12: g->ldb = bad_ld(how, c->min_ld[1]); break;
    case 15: g->ldc = bad_ld(how, c->min_ld[2]); break;
    case 17: g->act = (fb_activation)bad_enum(how, FB_ACT_NONE, 5); break;
    case 9: case 11: case 14: case 16:
        spoil_pointer(find(c, pos), how);
        break;
    default: break; /* alpha (8) and beta (13) are never wrong */
    }
}

static void spoil_mlp(call *c, int pos, int how)
{
    fz_mlp *p = &c->p;
    switch (pos) {
    case 1: p->stale_handle = 1; break;
    case 2: p->dtype = (fb_dtype)bad_enum(how, FB_DTYPE_F32, 3); break;
    case 3: p->act = (fb_activation)bad_enum(how, FB_ACT_NONE, 5); break;
    case 4: p->m = bad_dim(how); break;
    case 5: p->k = bad_dim(how); break;
    case 6: p->h = bad_dim(how); break;
    case 7: p->n = bad_dim(how); break;
    case 9: p->ldx = bad_ld(how, c->min_ld[0]); break;
    case 17: p->ldy = bad_ld(how, c->min_ld[1]); break;
    default:
        spoil_pointer(find(c, pos), how);
        break;
    }
}

/* The argument position a byte spoils: 1..17. A 0 byte (which is also
 * what a short input reads past its end) picks one from the generator, so
 * that short inputs do not all spoil the handle. */
static int spoiled_position(fz_bytes *in, uint8_t byte)
{
    if (byte == 0)
        return 1 + (int)(fz_rng(in) % 17);
    return 1 + byte % 17;
}

/* The shapes of every operand, where the enums and sizes define them. */
static void shape_operands(call *c)
{
    for (int i = 0; i < c->nops; i++) {
        operand *o = &c->op[i];
        o->shaped = 0;
        o->extent = 0;
    }
    const int64_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    if (c->routine < 3) {
        const fz_gemm *g = &c->g;
        const int ok = (g->layout == FB_ROW_MAJOR || g->layout == FB_COL_MAJOR) &&
                       (g->transa >= FB_NO_TRANS && g->transa <= FB_CONJ_TRANS) &&
                       (g->transb >= FB_NO_TRANS && g->transb <= FB_CONJ_TRANS) &&
                       g->m >= 0 && g->n >= 0 && g->k >= 0;
        if (!ok)
            return;
        find(c, 9)->s = fz_gemm_a(g);
        find(c, 11)->s = fz_gemm_b(g);
        find(c, 14)->s = fz_gemm_c(g);
        find(c, 16)->s = (fz_stored){g->n, 1, g->n};
    } else {
        const fz_mlp *p = &c->p;
        const int ok = (p->dtype == FB_DTYPE_F32 || p->dtype == FB_DTYPE_F16 ||
                        p->dtype == FB_DTYPE_BF16) &&
                       p->m >= 0 && p->k >= 0 && p->h >= 0 && p->n >= 0;
        if (!ok)
            return;
        find(c, 8)->s = fz_mlp_x(p);
        find(c, 10)->s = fz_mlp_w(p);
        find(c, 12)->s = fz_mlp_w(p);
        find(c, 14)->s = fz_mlp_wd(p);
        find(c, 16)->s = fz_mlp_y(p);
        find(c, 11)->s = (fz_stored){p->h, 1, p->h};
        find(c, 13)->s = (fz_stored){p->h, 1, p->h};
        find(c, 15)->s = (fz_stored){p->n, 1, p->n};
    }
    for (int i = 0; i < c->nops; i++) {
        operand *o = &c->op[i];
        o->shaped = 1;
        o->extent = fz_extent(&o->s, es);
    }
}

static void decode(call *c, const uint8_t *data, size_t size, int allow_bad,
                   fz_bytes *in)
{
    memset(c, 0, sizeof *c);
    fz_bytes_init(in, data, size);
    c->routine = fz_take(in) % 4;
    const uint8_t flags = fz_take(in);
    const fb_activation act = (fb_activation)(fz_take(in) % 5);
    c->mode = fz_take(in) % FZ_NMODES;
    int64_t d[4];
    for (int i = 0; i < 4; i++)
        d[i] = fz_take(in) % MAX_DIM;
    for (int i = 0; i < 3; i++)
        c->pad[i] = fz_take(in) % 6;
    const uint8_t alpha_code = fz_take(in), beta_code = fz_take(in);
    const uint8_t pos1 = fz_take(in), how1 = fz_take(in);
    const uint8_t pos2 = fz_take(in), how2 = fz_take(in);
    c->use_null_handle = (flags >> 6) & 1;
    c->bad_mode = allow_bad && (flags >> 7);

    if (c->routine < 3) {
        static const fb_dtype dt[3] = {FB_DTYPE_F32, FB_DTYPE_F16, FB_DTYPE_BF16};
        fz_gemm *g = &c->g;
        c->dtype = g->dtype = dt[c->routine];
        g->layout = (flags & 1) ? FB_COL_MAJOR : FB_ROW_MAJOR;
        g->transa = trans_of[(flags >> 1) & 3];
        g->transb = trans_of[(flags >> 3) & 3];
        g->m = d[0], g->n = d[1], g->k = d[2];
        g->act = act;
        g->alpha = fz_scalar(in, alpha_code);
        g->beta = fz_scalar(in, beta_code + 1); /* code 0 -> beta 0 */
        add_op(c, "A", 9, 0, 1);
        add_op(c, "B", 11, 0, 1);
        add_op(c, "C", 14, 1, 1);
        add_op(c, "bias", 16, 0, (flags >> 5) & 1);
        /* Leading dimensions: the minimum plus padding. */
        shape_operands(c);
        const int strided[3] = {9, 11, 14};
        for (int i = 0; i < 3; i++) {
            const int64_t inner = find(c, strided[i])->s.inner;
            c->min_ld[i] = inner > 1 ? inner : 1;
        }
        g->lda = c->min_ld[0] + c->pad[0];
        g->ldb = c->min_ld[1] + c->pad[1];
        g->ldc = c->min_ld[2] + c->pad[2];
        if (c->bad_mode) {
            spoil_gemm(c, spoiled_position(in, pos1), how1);
            if (how1 & 0x80)
                spoil_gemm(c, spoiled_position(in, pos2), how2);
        }
    } else {
        static const fb_dtype dt[4] = {FB_DTYPE_F32, FB_DTYPE_F16,
                                       FB_DTYPE_BF16, FB_DTYPE_F32};
        fz_mlp *p = &c->p;
        c->dtype = p->dtype = dt[flags & 3];
        p->act = act;
        p->m = d[0], p->k = d[1], p->h = d[2], p->n = d[3];
        c->min_ld[0] = p->k > 1 ? p->k : 1;
        c->min_ld[1] = p->n > 1 ? p->n : 1;
        p->ldx = c->min_ld[0] + c->pad[0];
        p->ldy = c->min_ld[1] + c->pad[1];
        add_op(c, "X", 8, 0, 1);
        add_op(c, "Wg", 10, 0, 1);
        add_op(c, "bg", 11, 0, (flags >> 2) & 1);
        add_op(c, "Wu", 12, 0, 1);
        add_op(c, "bu", 13, 0, (flags >> 3) & 1);
        add_op(c, "Wd", 14, 0, 1);
        add_op(c, "bd", 15, 0, (flags >> 4) & 1);
        add_op(c, "Y", 16, 1, 1);
        if (c->bad_mode) {
            spoil_mlp(c, spoiled_position(in, pos1), how1);
            if (how1 & 0x80)
                spoil_mlp(c, spoiled_position(in, pos2), how2);
        }
    }
    shape_operands(c);
}

/* ---- buffers --------------------------------------------------------------------- */

/* The pointer the library will get, before the buffers exist: NULL, or a
 * stand-in with the right alignment, for the model (which then leaves out
 * the overlap rule: the stand-ins all lie at one address). */
static const void *model_pointer(const operand *o, int64_t es)
{
    if (o->null || !o->present)
        return NULL;
    return (const void *)(uintptr_t)(4096 + o->misalign + 0 * es);
}

static fz_outcomes expect(call *c, int real_pointers)
{
    const int64_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
#define PTR(pos) (real_pointers ? (const void *)find(c, pos)->data          \
                                : model_pointer(find(c, pos), es))
    if (c->routine < 3) {
        fz_gemm *g = &c->g;
        g->a = PTR(9);
        g->b = PTR(11);
        g->c = (void *)PTR(14);
        g->bias = PTR(16);
        g->unplaced = !real_pointers;
        return fz_gemm_expect(g);
    }
    fz_mlp *p = &c->p;
    p->x = PTR(8);
    p->wg = PTR(10);
    p->bg = PTR(11);
    p->wu = PTR(12);
    p->bu = PTR(13);
    p->wd = PTR(14);
    p->bd = PTR(15);
    p->y = (void *)PTR(16);
    p->unplaced = !real_pointers;
    return fz_mlp_expect(p);
#undef PTR
}

static int has_work(const call *c)
{
    return c->routine < 3 ? c->g.m > 0 && c->g.n > 0 : c->p.m > 0 && c->p.n > 0;
}

/* Whether a size or leading dimension exceeds what OpenBLAS's 32-bit
 * integer holds: a valid call may then be FB_STATUS_NOT_SUPPORTED on the
 * CPU backend (which says so rather than truncate), writing nothing. */
static int beyond_blasint(const call *c)
{
    const int64_t v[6] = {
        c->routine < 3 ? c->g.m : c->p.m,   c->routine < 3 ? c->g.n : c->p.n,
        c->routine < 3 ? c->g.k : c->p.k,   c->routine < 3 ? c->g.lda : c->p.ldx,
        c->routine < 3 ? c->g.ldb : c->p.ldy, c->routine < 3 ? c->g.ldc : c->p.h};
    for (int i = 0; i < 6; i++)
        if (v[i] > INT32_MAX)
            return 1;
    return 0;
}

static int needs_standin(const operand *o)
{
    return !o->shaped || o->extent < 0 || o->extent > REAL_LIMIT;
}

static void fill_bits(const operand *o, fb_dtype t, uint32_t bits)
{
    const int64_t n = (int64_t)(o->bytes - (size_t)o->misalign) / fz_size(t);
    unsigned char *base = o->alloc + o->misalign;
    for (int64_t i = 0; i < n; i++)
        fz_set_bits(t, base, i, bits);
}

static void make_buffer(operand *o, fb_dtype t)
{
    const int64_t es = fz_size(t);
    o->standin = needs_standin(o);
    o->avail = o->standin ? STANDIN : o->extent;
    o->bytes = (size_t)((o->avail + 2 * GUARD) * es) + (size_t)o->misalign;
    o->alloc = malloc(o->bytes);
    o->before = malloc(o->bytes);
    if (o->alloc == NULL || o->before == NULL)
        abort();
    memset(o->alloc, 0xa5, (size_t)o->misalign);
    fill_bits(o, t, fz_guard_bits(t));
    o->data = (o->null || !o->present) ? NULL
                                       : o->alloc + o->misalign + GUARD * es;
}

static void free_buffers(call *c)
{
    for (int i = 0; i < c->nops; i++) {
        free(c->op[i].alloc);
        free(c->op[i].before);
        free(c->op[i].img);
    }
}

/* Window element e of line o, as an offset from data. */
static int64_t at(const operand *o, int64_t line, int64_t e)
{
    return line * o->s.ld + e;
}

/* Whether the window lies inside a real buffer: a valid leading
 * dimension and an extent that was allocated. Then inner * outer <=
 * extent, so no index below overflows. */
static int window_ok(const operand *o)
{
    return o->shaped && !o->standin && o->extent >= 0 &&
           o->s.ld >= (o->s.inner > 1 ? o->s.inner : 1);
}

static int64_t window_count(const operand *o)
{
    return window_ok(o) ? o->s.inner * o->s.outer : 0;
}

static int64_t window_offset(const operand *o, int64_t w)
{
    return at(o, w / o->s.inner, w % o->s.inner);
}

/* Fill the windows: inputs with values, outputs with poison (or, for C
 * with beta != 0, values: C is then an input too). */
static void fill_windows(call *c, fz_bytes *in)
{
    const fb_dtype t = c->dtype;
    for (int i = 0; i < c->nops; i++) {
        operand *o = &c->op[i];
        if (!window_ok(o))
            continue;
        unsigned char *base = o->alloc + o->misalign + GUARD * fz_size(t);
        const int poison = o->output && !(c->routine < 3 && c->g.beta != 0.0f);
        for (int64_t w = 0; w < window_count(o); w++) {
            const int64_t off = window_offset(o, w);
            if (poison) {
                fz_set_bits(t, base, off, fz_poison_bits(t));
                continue;
            }
            int is_nan;
            const double v = fz_value(in, t, c->mode, &is_nan);
            if (is_nan)
                fz_set_bits(t, base, off, fz_input_nan_bits(t));
            else
                fz_set(t, base, off, v);
        }
    }
    /* Edits: special values at chosen elements of the inputs. */
    while (in->at + 3 <= in->n) {
        const uint8_t which = fz_take(in), idx = fz_take(in), code = fz_take(in);
        operand *o = &c->op[which % c->nops];
        if (window_count(o) == 0)
            continue;
        if (o->output && !(c->routine < 3 && c->g.beta != 0.0f))
            continue;
        unsigned char *base = o->alloc + o->misalign + GUARD * fz_size(t);
        const int64_t off = window_offset(o, (idx * 131 + which / c->nops) %
                                                 window_count(o));
        int is_nan;
        const double v = fz_special(t, code, &is_nan);
        if (is_nan)
            fz_set_bits(t, base, off, fz_input_nan_bits(t));
        else
            fz_set(t, base, off, v);
    }
}

/* The double image of a real operand (NaN outside its window). */
static double *image(const operand *o, fb_dtype t)
{
    const int64_t n = o->extent > 0 ? o->extent : 1;
    double *img = malloc((size_t)n * sizeof *img);
    if (img == NULL)
        abort();
    for (int64_t i = 0; i < n; i++)
        img[i] = NAN;
    if (o->data == NULL || o->standin)
        return img;
    for (int64_t w = 0; w < window_count(o); w++) {
        const int64_t off = window_offset(o, w);
        img[off] = fz_get(t, o->data, off);
    }
    return img;
}

/* ---- reporting a failure ----------------------------------------------------------- */

static void describe(const call *c, fb_status st, int arg, fz_outcomes want)
{
    static const char *rn[4] = {"sgemm_bias_act", "hgemm_bias_act",
                                "bgemm_bias_act", "mlp_geglu_forward"};
    fprintf(stderr, "fuzz_gemm: %s, %s handle%s\n", rn[c->routine],
            c->use_null_handle ? "NULL" : "own",
            c->bad_mode ? ", bad-argument mode" : "");
    if (c->routine < 3) {
        const fz_gemm *g = &c->g;
        fprintf(stderr,
                "  layout %d transa %d transb %d m %lld n %lld k %lld "
                "alpha %a beta %a lda %lld ldb %lld ldc %lld act %d "
                "bias %s stale %d\n",
                (int)g->layout, (int)g->transa, (int)g->transb,
                (long long)g->m, (long long)g->n, (long long)g->k,
                (double)g->alpha, (double)g->beta, (long long)g->lda,
                (long long)g->ldb, (long long)g->ldc, (int)g->act,
                g->bias ? "yes" : "NULL", g->stale_handle);
    } else {
        const fz_mlp *p = &c->p;
        fprintf(stderr,
                "  dtype %d act %d m %lld k %lld h %lld n %lld ldx %lld "
                "ldy %lld bg %s bu %s bd %s stale %d\n",
                (int)p->dtype, (int)p->act, (long long)p->m, (long long)p->k,
                (long long)p->h, (long long)p->n, (long long)p->ldx,
                (long long)p->ldy, p->bg ? "yes" : "NULL",
                p->bu ? "yes" : "NULL", p->bd ? "yes" : "NULL",
                p->stale_handle);
    }
    for (int i = 0; i < c->nops; i++) {
        const operand *o = &c->op[i];
        fprintf(stderr, "  %s (arg %d): %s%s misalign %d, extent %lld%s",
                o->name, o->pos, o->data ? "given" : "NULL",
                o->present ? "" : " (absent)", o->misalign,
                (long long)o->extent, o->standin ? " (stand-in buffer)" : "");
        /* Where the special values are, in the state before the call. */
        const unsigned char *d0 = o->before + o->misalign +
                                  GUARD * fz_size(c->dtype);
        int shown = 0;
        for (int64_t w = 0; o->data && w < window_count(o) && shown < 8; w++) {
            const double v = fz_get(c->dtype, d0, window_offset(o, w));
            if (!isfinite(v) || (v != 0 && fabs(v) < 1e-30) || fabs(v) > 1e30) {
                fprintf(stderr, "%s [%lld]=%g", shown ? "," : "; specials:",
                        (long long)w, v);
                shown++;
            }
        }
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "  got status %d (%s), argument %d; acceptable:",
            (int)st, fb_status_string(st), arg);
    for (int p = 0; p < 18; p++)
        if (want & (1u << p))
            fprintf(stderr, p == 0 ? " success" : " arg %d", p);
    fprintf(stderr, "\n  last message: %s\n",
            fb_handle_last_message(c->use_null_handle ? NULL : own));
}

#define FAIL(c, st, arg, want, ...)                                          \
    do {                                                                     \
        describe(c, st, arg, want);                                          \
        fprintf(stderr, "  FAILED: " __VA_ARGS__);                           \
        fprintf(stderr, "\n");                                               \
        abort();                                                             \
    } while (0)

/* ---- checks -------------------------------------------------------------------------- */

/* Bytes of o outside the window that changed: the first one's offset
 * from the allocation, or -1. With whole set, the window too. */
static long changed_byte(const call *c, const operand *o, int whole)
{
    const int64_t es = fz_size(c->dtype);
    const unsigned char *data0 = o->alloc + o->misalign + GUARD * es;
    for (size_t b = 0; b < o->bytes; b++) {
        if (o->alloc[b] == o->before[b])
            continue;
        if (!whole && window_ok(o) && b >= (size_t)(data0 - o->alloc)) {
            const int64_t el = (int64_t)(b - (size_t)(data0 - o->alloc)) / es;
            if (el < o->extent && el % o->s.ld < o->s.inner &&
                el / o->s.ld < o->s.outer)
                continue; /* inside the window */
        }
        return (long)b;
    }
    return -1;
}

static int judge_all(const call *c, const operand *out, const fz_expect *E,
                     int64_t *bad_off)
{
    for (int64_t w = 0; w < window_count(out); w++) {
        const int64_t off = window_offset(out, w);
        if (!fz_judge(fz_get(c->dtype, out->data, off), &E[off])) {
            *bad_off = off;
            return 0;
        }
    }
    return 1;
}

static void count_kinds(const operand *out, const fz_expect *E)
{
    for (int64_t w = 0; w < window_count(out); w++) {
        const fz_expect *e = &E[window_offset(out, w)];
        stats.by_kind[e->kind]++;
        stats.ovf += e->ovf;
    }
}

static void check_values(call *c, fb_status st, int arg, fz_outcomes want)
{
    const fb_dtype t = c->dtype;
    operand *out = find(c, c->routine < 3 ? 14 : 16);
    for (int i = 0; i < c->nops; i++)
        c->op[i].img = image(&c->op[i], t);
    /* The images were made after the call, from the inputs, which are
     * checked unchanged; C's image must be its state before the call. */
    if (c->routine < 3) {
        const int64_t es = fz_size(t);
        const void *c0 = out->before + out->misalign + GUARD * es;
        for (int64_t w = 0; w < window_count(out); w++) {
            const int64_t off = window_offset(out, w);
            out->img[off] = fz_get(t, c0, off);
        }
    }
    const int64_t ne = out->extent > 0 ? out->extent : 1;
    fz_expect *E = calloc((size_t)ne, sizeof *E);
    fz_expect *E2 = calloc((size_t)ne, sizeof *E2);
    if (E == NULL || E2 == NULL)
        abort();
    int alt = 0;
    if (c->routine < 3) {
        alt = fz_gemm_expectations(&c->g, find(c, 9)->img, find(c, 11)->img,
                                   out->img,
                                   c->g.bias ? find(c, 16)->img : NULL, E, E2);
    } else {
        fz_mlp_expectations(&c->p, find(c, 8)->img, find(c, 10)->img,
                            c->p.bg ? find(c, 11)->img : NULL, find(c, 12)->img,
                            c->p.bu ? find(c, 13)->img : NULL, find(c, 14)->img,
                            c->p.bd ? find(c, 15)->img : NULL, E);
    }
    /* Every element of the window was written: none still holds the
     * poison (C with beta != 0 held values, not poison). */
    const int poisoned = !(c->routine < 3 && c->g.beta != 0.0f);
    for (int64_t w = 0; poisoned && w < window_count(out); w++) {
        const int64_t off = window_offset(out, w);
        if (fz_bits(t, out->data, off) == fz_poison_bits(t))
            FAIL(c, st, arg, want, "%s element %lld (offset %lld) was not "
                 "written", out->name, (long long)w, (long long)off);
    }
    int64_t off1 = -1, off2 = -1;
    const int ok1 = judge_all(c, out, E, &off1);
    const int ok2 = alt && judge_all(c, out, E2, &off2);
    if (!ok1 && !ok2) {
        const fz_expect *e = &E[off1];
        const int64_t line = off1 / out->s.ld, e_in = off1 % out->s.ld;
        FAIL(c, st, arg, want,
             "%s at line %lld, element %lld (offset %lld): got %.9g, "
             "expected %.9g (%s, bound %.3g, ovf %d)%s",
             out->name, (long long)line, (long long)e_in, (long long)off1,
             fz_get(t, out->data, off1), e->ref, fz_kind_name(e->kind),
             e->bound, e->ovf,
             alt ? "; nor BLAS's alpha == 0 reading" : "");
    }
    if (!ok1 && ok2)
        stats.blas_alpha0++;
    count_kinds(out, ok1 ? E : E2);
    free(E);
    free(E2);
}

/* ---- one input ------------------------------------------------------------------------- */

static fb_status run(const call *c, fb_handle h)
{
    if (c->routine == 3) {
        const fz_mlp *p = &c->p;
        return mlp_geglu_forward(h, p->dtype, p->act, p->m, p->k, p->h, p->n,
                                 p->x, p->ldx, p->wg, p->bg, p->wu, p->bu,
                                 p->wd, p->bd, p->y, p->ldy);
    }
    const fz_gemm *g = &c->g;
    switch (c->routine) {
    case 0:
        return sgemm_bias_act(h, g->layout, g->transa, g->transb, g->m, g->n,
                              g->k, g->alpha, g->a, g->lda, g->b, g->ldb,
                              g->beta, g->c, g->ldc, g->bias, g->act);
    case 1:
        return hgemm_bias_act(h, g->layout, g->transa, g->transb, g->m, g->n,
                              g->k, g->alpha, g->a, g->lda, g->b, g->ldb,
                              g->beta, g->c, g->ldc, g->bias, g->act);
    default:
        return bgemm_bias_act(h, g->layout, g->transa, g->transb, g->m, g->n,
                              g->k, g->alpha, g->a, g->lda, g->b, g->ldb,
                              g->beta, g->c, g->ldc, g->bias, g->act);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    call c;
    fz_bytes in;
    decode(&c, data, size, 1, &in);
    /* A spoiled call that is still valid and has work to do, but whose
     * operands could not be allocated, is made again unspoiled: the
     * library would rightly read and write all of them. */
    fz_outcomes want = expect(&c, 0);
    int too_big = 0;
    for (int i = 0; i < c.nops; i++)
        too_big |= needs_standin(&c.op[i]);
    if ((want & 1u) && has_work(&c) && too_big) {
        decode(&c, data, size, 0, &in);
        stats.reverted++;
    }
    for (int i = 0; i < c.nops; i++)
        make_buffer(&c.op[i], c.dtype);
    fill_windows(&c, &in);
    want = expect(&c, 1);
    for (int i = 0; i < c.nops; i++)
        memcpy(c.op[i].before, c.op[i].alloc, c.op[i].bytes);

    const int stale_call = c.routine < 3 ? c.g.stale_handle : c.p.stale_handle;
    const fb_handle h = stale_call ? stale : c.use_null_handle ? NULL : own;
    const fb_status st = run(&c, h);
    stats.calls++;
    stats.routine[c.routine]++;

    /* The status, and what the handle says about it. */
    int arg = 0;
    if (st == FB_STATUS_SUCCESS) {
        if (!(want & 1u))
            FAIL(&c, st, 0, want, "an invalid call succeeded");
        stats.success++;
    } else if (st == FB_STATUS_INVALID_ARGUMENT) {
        arg = fb_handle_last_arg(h);
        if (arg < 1 || arg > 17 || !(want & (1u << arg)))
            FAIL(&c, st, arg, want, "wrong argument position");
        stats.invalid++;
        stats.by_arg[arg]++;
    } else if (st == FB_STATUS_NOT_SUPPORTED && (want & 1u) &&
               beyond_blasint(&c)) {
        stats.not_supported++;
    } else {
        FAIL(&c, st, 0, want, "unexpected status");
    }
    if (!stale_call && fb_handle_last_status(h) != st)
        FAIL(&c, st, arg, want, "fb_handle_last_status says %d",
             (int)fb_handle_last_status(h));
    if (st == FB_STATUS_SUCCESS && fb_handle_last_arg(h) != 0)
        FAIL(&c, st, arg, want, "fb_handle_last_arg is %d after success",
             fb_handle_last_arg(h));

    /* Inputs never change; outputs change only inside the window, and
     * only when the call succeeded with work to do. */
    for (int i = 0; i < c.nops; i++) {
        const operand *o = &c.op[i];
        const int may_write = o->output && st == FB_STATUS_SUCCESS &&
                              has_work(&c);
        const long b = changed_byte(&c, o, !may_write);
        if (b >= 0)
            FAIL(&c, st, arg, want, "%s: byte %ld of its buffer (guards "
                 "included) changed", o->name, b);
    }
    if (st == FB_STATUS_SUCCESS && has_work(&c))
        check_values(&c, st, arg, want);
    free_buffers(&c);
    return 0;
}
