/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused_selftest_e4m3.cuh -- the e4m3 register kernels in the selftest
 * (included by fused_selftest.cu; --e4m3-probe, --e4m3-once): the mid
 * kernel (fused_fp8_mid.cu) and the decode kernel checked against a
 * float64 reference of the dequantised weights at ragged shapes, every
 * k split, NaN patterns; then timed against each other, the whole e4m3
 * MLP driver (fused_fp8_mlp.cu, prefill stubbed out below) and cuBLAS
 * on bf16 weights.
 */
#include "fused/fused_fp8.h"
#include "module/result.h"

/* fused_fp8_mlp.cu's prefill entries (fused_fp8_prefill.cu): the sandbox
 * has no module (no staging, no cuBLASLt), so the MLP driver runs its
 * register kernels; the wgmma kernel is called directly. */
fb_status fb_fp8_gemm_prefill(fb_cuda_ctx *, const fb_e4m3_gemm_problem *,
                              int, char *, size_t, fb_cuda_result *)
{
    return FB_STATUS_NOT_SUPPORTED;
}
bool fb_fp8_gate_up_prefill_applies(fb_cuda_ctx *, const fb_e4m3_mlp_problem *)
{
    return false;
}
fb_status fb_fp8_gate_up_prefill(fb_cuda_ctx *, const fb_e4m3_mlp_problem *,
                                 void *, size_t, fb_cuda_result *)
{
    return FB_STATUS_NOT_SUPPORTED;
}
fb_status fb_fp8_gemm_wgmma(fb_cuda_ctx *, const fb_e4m3_gemm_problem *,
                            int64_t, char *, size_t)
{
    return FB_STATUS_NOT_SUPPORTED;
}
bool fb_fp8_gate_up_wgmma_applies(fb_cuda_ctx *, const fb_e4m3_mlp_problem *)
{
    return false;
}
fb_status fb_fp8_gate_up_wgmma(fb_cuda_ctx *, const fb_e4m3_mlp_problem *,
                               void *)
{
    return FB_STATUS_NOT_SUPPORTED;
}
void fb_result_clear(fb_cuda_result *) {}

/* An e4m3 byte's value from its definition (independent of the library's
 * helpers): S.EEEE.MMM, bias 7, subnormals at E = 0, NaN at E = 15, M = 7. */
__device__ static double e4m3_ref_value(uint8_t b)
{
    const int e = (b >> 3) & 15, mant = b & 7;
    double v;
    if (e == 15 && mant == 7)
        v = nan("");
    else if (e == 0)
        v = ldexp((double)mant, -9);
    else
        v = ldexp(1.0 + mant / 8.0, e - 7);
    return (b & 0x80) ? -v : v;
}

/* out[i * n + j] = dot of token i with dequantised row j's e4m3 values
 * (unscaled), double; abs: the same with absolute values. */
template <typename T>
__global__ void e4m3_ref_dots_k(const T *x, int64_t x_ts, const uint8_t *w,
                                int64_t w_cs, int64_t m, int64_t n, int64_t k,
                                double *out, double *abs_out)
{
    const int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (idx >= m * n)
        return;
    const int64_t i = idx / n, j = idx % n;
    double s = 0, a = 0;
    for (int64_t c = 0; c < k; c++) {
        const double p = to_d(x[i * x_ts + c]) * e4m3_ref_value(w[j * w_cs + c]);
        s += p;
        a += fabs(p);
    }
    out[idx] = s;
    abs_out[idx] = a;
}

static double act_host(fb_activation a, double x)
{
    switch (a) {
    case FB_ACT_RELU: return x < 0 ? 0.0 : x;
    case FB_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case FB_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case FB_ACT_SILU: return x / (1.0 + exp(-x));
    default: return x;
    }
}

struct E4m3Data {
    int64_t m, n, k, x_ts, w_cs;
    fb_dtype dt;
    void *x = nullptr;
    uint8_t *w = nullptr;
    float *scale = nullptr;
    void *bias = nullptr;
    std::vector<double> dot, absdot;
};

/* Weights: random bytes, every pattern but NaN unless nan (then also
 * S.1111.111); X uniform in [-1, 1); scales about 1/64. */
static void e4m3_fill(Device &dev, E4m3Data &d, uint64_t seed, bool nan)
{
    const size_t xe = (size_t)(d.m - 1) * d.x_ts + d.k;
    CK(cudaMalloc(&d.x, xe * 2));
    CK(cudaMalloc(&d.w, (size_t)d.n * d.w_cs));
    CK(cudaMalloc(&d.scale, d.n * 4));
    CK(cudaMalloc(&d.bias, d.n * 2));
    fill_random(d.dt, d.x, xe, seed, 1.0f, dev.stream);
    fill_random(d.dt, d.bias, d.n, seed + 7, 1.0f, dev.stream);
    std::vector<uint8_t> w((size_t)d.n * d.w_cs);
    uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto &b : w) {
        r = mix64(r);
        b = (uint8_t)r;
        if (!nan && (b & 0x7f) == 0x7f)
            b ^= 1;
    }
    if (nan) /* a few NaN bytes only, so that most outputs stay finite */
        for (auto &b : w)
            if ((b & 0x7f) == 0x7f && (mix64(r += 1) & 7))
                b ^= 1;
    std::vector<float> s(d.n);
    for (int64_t j = 0; j < d.n; j++)
        s[j] = (float)(0.5 + (mix64(seed + 1000 + j) >> 11) * 0x1p-53) / 64.0f;
    CK(cudaMemcpy(d.w, w.data(), w.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.scale, s.data(), d.n * 4, cudaMemcpyHostToDevice));
    double *dd, *da;
    CK(cudaMalloc(&dd, d.m * d.n * 8));
    CK(cudaMalloc(&da, d.m * d.n * 8));
    const int64_t tot = d.m * d.n;
    if (d.dt == FB_DTYPE_F16)
        e4m3_ref_dots_k<__half><<<(unsigned)((tot + 255) / 256), 256, 0, dev.stream>>>(
            (const __half *)d.x, d.x_ts, d.w, d.w_cs, d.m, d.n, d.k, dd, da);
    else
        e4m3_ref_dots_k<__nv_bfloat16><<<(unsigned)((tot + 255) / 256), 256, 0, dev.stream>>>(
            (const __nv_bfloat16 *)d.x, d.x_ts, d.w, d.w_cs, d.m, d.n, d.k, dd, da);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(dev.stream));
    d.dot.resize(tot);
    d.absdot.resize(tot);
    CK(cudaMemcpy(d.dot.data(), dd, tot * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d.absdot.data(), da, tot * 8, cudaMemcpyDeviceToHost));
    cudaFree(dd);
    cudaFree(da);
}

static void e4m3_free(E4m3Data &d)
{
    cudaFree(d.x);
    cudaFree(d.w);
    cudaFree(d.scale);
    cudaFree(d.bias);
}

static double host_scale(const E4m3Data &d, int64_t j)
{
    float s;
    CK(cudaMemcpy(&s, d.scale + j, 4, cudaMemcpyDeviceToHost));
    return s;
}

/* One element against its reference: NaN exactly where the reference is
 * NaN; else within one rounding of the output plus the fp32 sum's error
 * (k 2^-24 sum |products| per term, twice for safety) carried through the
 * activation (slope under 1.2). */
static bool e4m3_close(double out, double ref, double slack, fb_dtype dt)
{
    if (std::isnan(ref))
        return std::isnan(out);
    /* past fp16's largest finite value (and half its ulp): infinity */
    if (dt == FB_DTYPE_F16 && fabs(ref) - slack >= 65520.0)
        return std::isinf(out) && (out > 0) == (ref > 0);
    if (!std::isfinite(out))
        return false;
    const double u = dt == FB_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
    /* 1.001: the fp32 epilogue's own few ulps; the fp16 term: half an ulp
     * of its subnormals */
    return fabs(out - ref) <= u * fabs(ref) * 1.001 + 1.2 * slack +
                                  (dt == FB_DTYPE_F16 ? 0x1p-25 : 0x1p-140);
}

/* gemm through fb_fp8_gemm with kernel (1 decode, 2 mid) and splits
 * (mid: 0 its own choice), C with padded rows (sentinel outside). */
static void check_e4m3_gemm(Device &dev, fb_dtype dt, int64_t m, int64_t n,
                            int64_t k, int64_t x_ts, fb_activation act,
                            bool bias, float beta, int kernel, int splits,
                            bool nan, uint64_t seed)
{
    E4m3Data d;
    d.m = m, d.n = n, d.k = k, d.x_ts = x_ts, d.w_cs = (k + 15) / 16 * 16, d.dt = dt;
    e4m3_fill(dev, d, seed, nan);
    const int64_t ldc = n + 3;
    const size_t cbytes = (size_t)m * ldc * 2;
    void *c;
    CK(cudaMalloc(&c, cbytes));
    std::vector<unsigned char> c0(cbytes);
    if (beta != 0.0f) {
        fill_random(dt, c, (size_t)m * ldc, seed + 3, 1.0f, dev.stream);
        CK(cudaStreamSynchronize(dev.stream));
        CK(cudaMemcpy(c0.data(), c, cbytes, cudaMemcpyDeviceToHost));
        /* the padding keeps the sentinel */
        for (int64_t i = 0; i < m; i++)
            memset(&c0[((size_t)i * ldc + n) * 2], kSentinel, 6);
        CK(cudaMemcpy(c, c0.data(), cbytes, cudaMemcpyHostToDevice));
    } else {
        /* poison: NaN everywhere (0x7fff in either 16-bit type) but the
         * padding */
        for (size_t q = 0; q < cbytes / 2; q++) {
            c0[2 * q] = 0xff, c0[2 * q + 1] = 0x7f;
        }
        for (int64_t i = 0; i < m; i++)
            memset(&c0[((size_t)i * ldc + n) * 2], kSentinel, 6);
        CK(cudaMemcpy(c, c0.data(), cbytes, cudaMemcpyHostToDevice));
    }
    fb_e4m3_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = dt;
    p.m = m, p.n = n, p.k = k;
    p.alpha = 0.75f, p.beta = beta;
    p.x = d.x, p.x_ts = x_ts, p.x_ks = 1;
    p.w = d.w, p.w_cs = d.w_cs, p.w_ks = 1;
    p.scale = d.scale;
    p.c = c, p.c_ts = ldc, p.c_cs = 1;
    p.bias = bias ? d.bias : NULL;
    p.act = act;
    char path[64] = "";
    fbf_tuning t = fbf_tuning();
    t.e4m3_kernel = kernel;
    t.e4m3_splits = splits;
    {
        Knobs kn(t);
        fb_fp8_gemm(dev.stream, &p, path, sizeof path);
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(dev.stream));
    std::vector<unsigned char> out(cbytes);
    CK(cudaMemcpy(out.data(), c, cbytes, cudaMemcpyDeviceToHost));
    std::vector<float> sc(n);
    CK(cudaMemcpy(sc.data(), d.scale, n * 4, cudaMemcpyDeviceToHost));
    std::vector<unsigned char> bh(n * 2);
    CK(cudaMemcpy(bh.data(), d.bias, n * 2, cudaMemcpyDeviceToHost));
    int64_t bad = 0, nans = 0, pad_bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            const double dot = d.dot[i * n + j];
            double v = 0.75 * (dot * sc[j]);
            if (beta != 0.0f)
                v += (double)beta * host_to_double(dt, c0.data(), i * ldc + j);
            if (bias)
                v += host_to_double(dt, bh.data(), j);
            const double ref = act_host(act, v);
            const double slack = 2.0 * k * 0x1p-24 * d.absdot[i * n + j] * 0.75 * sc[j] +
                                 0x1p-24 * fabs(v) * 4;
            const double o = host_to_double(dt, out.data(), i * ldc + j);
            if (std::isnan(ref))
                nans++;
            if (!e4m3_close(o, ref, slack, dt)) {
                if (bad < 3)
                    printf("   (%lld, %lld): %.9g, reference %.9g\n", (long long)i,
                           (long long)j, o, ref);
                bad++;
            } else if (!std::isnan(ref) && fabs(ref) > 0) {
                worst = std::max(worst, fabs(o - ref) / fabs(ref));
            }
        }
        for (int q = 0; q < 6; q++)
            if (out[((size_t)i * ldc + n) * 2 + q] != kSentinel)
                pad_bad++;
    }
    report(bad == 0 && pad_bad == 0,
           "e4m3 gemm %s %lldx%lld <- %lld (x_ts %lld) %s%s beta %g %s splits %d%s: "
           "%lld bad, %lld NaN refs, worst rel %.2e, padding %s",
           dname(dt), (long long)m, (long long)n, (long long)k, (long long)x_ts,
           aname(act), bias ? "+bias" : "", beta, path, splits, nan ? " nan" : "",
           (long long)bad, (long long)nans, worst, pad_bad ? "TOUCHED" : "ok");
    cudaFree(c);
    e4m3_free(d);
}

/* Gate and up through the MLP driver (kernel 1 decode, 2 mid), H
 * compared with act(G sg + bg) (U su + bu) from float64 dots; then the
 * mid kernel's determinism: the same bits on a second run. */
static void check_e4m3_gate_up(Device &dev, fb_dtype dt, int64_t m, int64_t h,
                               int64_t k, fb_activation act, bool bias,
                               int kernel, int splits, uint64_t seed)
{
    /* one weight buffer of 2h rows: Wg the first h, Wu the next */
    E4m3Data d;
    d.m = m, d.n = 2 * h, d.k = k, d.x_ts = k, d.w_cs = k, d.dt = dt;
    e4m3_fill(dev, d, seed, false);
    fb_e4m3_mlp_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = dt, p.gate_act = act;
    p.m = m, p.k = k, p.h = h, p.n = 1;
    p.x = d.x, p.ldx = k;
    p.wg = d.w, p.wu = d.w + h * k;
    p.sg = d.scale, p.su = d.scale + h;
    p.bg = bias ? d.bias : NULL;
    p.bu = bias ? (const char *)d.bias + h * 2 : NULL;
    void *hb;
    CK(cudaMalloc(&hb, (size_t)m * h * 2));
    CK(cudaMemset(hb, 0xff, (size_t)m * h * 2));
    fbf_tuning t = fbf_tuning();
    t.e4m3_kernel = kernel;
    t.e4m3_splits = splits;
    cudaError_t e;
    {
        Knobs kn(t);
        e = fb_fp8_mid_gate_up(dev.stream, &p, hb, splits);
    }
    CK(e);
    CK(cudaStreamSynchronize(dev.stream));
    std::vector<unsigned char> out((size_t)m * h * 2), again(out.size());
    CK(cudaMemcpy(out.data(), hb, out.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemset(hb, 0xff, (size_t)m * h * 2));
    CK(fb_fp8_mid_gate_up(dev.stream, &p, hb, splits));
    CK(cudaStreamSynchronize(dev.stream));
    CK(cudaMemcpy(again.data(), hb, out.size(), cudaMemcpyDeviceToHost));
    std::vector<float> sc(2 * h);
    CK(cudaMemcpy(sc.data(), d.scale, 2 * h * 4, cudaMemcpyDeviceToHost));
    std::vector<unsigned char> bh(2 * h * 2);
    CK(cudaMemcpy(bh.data(), d.bias, 2 * h * 2, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < h; j++) {
            const int64_t n2 = 2 * h;
            double g = d.dot[i * n2 + j] * sc[j], u = d.dot[i * n2 + h + j] * sc[h + j];
            if (bias) {
                g += host_to_double(dt, bh.data(), j);
                u += host_to_double(dt, bh.data(), h + j);
            }
            const double ag = act_host(act, g), ref = ag * u;
            const double eg = 2.0 * k * 0x1p-24 * d.absdot[i * n2 + j] * sc[j] + 0x1p-24 * fabs(g) * 4;
            const double eu = 2.0 * k * 0x1p-24 * d.absdot[i * n2 + h + j] * sc[h + j] + 0x1p-24 * fabs(u) * 4;
            const double slack = 1.2 * eg * fabs(u) + fabs(ag) * eu + 0x1p-22 * fabs(ref);
            const double o = host_to_double(dt, out.data(), i * h + j);
            if (!e4m3_close(o, ref, slack, dt)) {
                if (bad < 3)
                    printf("   H(%lld, %lld): %.9g, reference %.9g\n", (long long)i,
                           (long long)j, o, ref);
                bad++;
            } else if (fabs(ref) > 0) {
                worst = std::max(worst, fabs(o - ref) / fabs(ref));
            }
        }
    const bool same = out == again;
    report(bad == 0 && same,
           "e4m3 gate-up mid %s m %lld h %lld k %lld %s%s splits %d: %lld bad, worst rel %.2e, %s",
           dname(dt), (long long)m, (long long)h, (long long)k, aname(act),
           bias ? "+bias" : "", splits, (long long)bad, worst,
           same ? "same bits twice" : "BITS DIFFER between runs");
    cudaFree(hb);
    e4m3_free(d);
}

/* The determinism of the gemm with a k split: the same bits twice. */
static void check_e4m3_repeat(Device &dev, int64_t m, int64_t n, int64_t k,
                              int splits, uint64_t seed)
{
    E4m3Data d;
    d.m = m, d.n = n, d.k = k, d.x_ts = k, d.w_cs = k, d.dt = FB_DTYPE_BF16;
    e4m3_fill(dev, d, seed, false);
    fb_e4m3_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = d.dt;
    p.m = m, p.n = n, p.k = k, p.alpha = 1.0f;
    p.x = d.x, p.x_ts = k, p.x_ks = 1;
    p.w = d.w, p.w_cs = k, p.w_ks = 1;
    p.scale = d.scale;
    void *c;
    CK(cudaMalloc(&c, (size_t)m * n * 2));
    p.c = c, p.c_ts = n, p.c_cs = 1;
    p.act = FB_ACT_GELU_TANH;
    std::vector<unsigned char> a((size_t)m * n * 2), b(a.size());
    for (int rep = 0; rep < 2; rep++) {
        CK(cudaMemset(c, 0, a.size()));
        CK(fb_fp8_mid_gemm(dev.stream, &p, splits));
        CK(cudaStreamSynchronize(dev.stream));
        CK(cudaMemcpy(rep ? b.data() : a.data(), c, a.size(), cudaMemcpyDeviceToHost));
    }
    report(a == b, "e4m3 mid gemm %lldx%lld <- %lld splits %d: %s", (long long)m,
           (long long)n, (long long)k, splits, a == b ? "same bits twice" : "BITS DIFFER");
    cudaFree(c);
    e4m3_free(d);
}

static void e4m3_checks(Device &dev, uint64_t seed, bool small)
{
    const fb_activation acts[] = {FB_ACT_GELU_TANH, FB_ACT_NONE, FB_ACT_RELU, FB_ACT_SILU, FB_ACT_GELU_ERF};
    struct G { int64_t m, n, k, x_ts; };
    const G big[] = {{17, 300, 200, 200}, {33, 257, 130, 132}, {64, 1000, 1000, 1000},
                     {65, 515, 4099, 4100}, {100, 777, 2000, 2008}, {130, 256, 64, 64},
                     {257, 1300, 700, 704}, {1000, 600, 1500, 1500}, {40, 4096, 11008, 11008},
                     {24, 11008, 4096, 4096}, {5, 300, 520, 520}, {1024, 300, 96, 100}};
    const G little[] = {{17, 300, 200, 200}, {33, 257, 130, 132}, {65, 70, 100, 100},
                        {5, 40, 72, 76}};
    const G *cs = small ? little : big;
    const int nc = small ? 4 : 12;
    int q = 0;
    for (int i = 0; i < nc; i++)
        for (fb_dtype dt : {FB_DTYPE_BF16, FB_DTYPE_F16}) {
            const G &g = cs[i];
            const fb_activation a = acts[q % 5];
            check_e4m3_gemm(dev, dt, g.m, g.n, g.k, g.x_ts, a, q % 3 != 1,
                            q % 4 == 3 ? 0.5f : 0.0f, 2, 0, false, seed + 100 * q);
            q++;
        }
    /* every split width, the NaN patterns, the decode kernel on the same
     * cases (its rule still covers up to 64 rows) */
    for (int s : {1, 2, 3, 5, 8})
        check_e4m3_gemm(dev, FB_DTYPE_BF16, small ? 40 : 70, 300, 1000, 1000,
                        FB_ACT_GELU_TANH, true, 0.0f, 2, s, false, seed + 7 + s);
    check_e4m3_gemm(dev, FB_DTYPE_BF16, 37, 260, 333, 336, FB_ACT_RELU, true, 0.0f,
                    2, 0, true, seed + 31);
    check_e4m3_gemm(dev, FB_DTYPE_F16, 37, 260, 333, 336, FB_ACT_NONE, false, 0.0f,
                    2, 3, true, seed + 32);
    check_e4m3_gemm(dev, FB_DTYPE_BF16, 37, 260, 333, 336, FB_ACT_RELU, true, 0.0f,
                    1, 0, true, seed + 31);
    check_e4m3_gemm(dev, FB_DTYPE_BF16, 33, 257, 130, 132, FB_ACT_GELU_TANH, true,
                    0.0f, 1, 0, false, seed + 33);
    /* gate and up */
    const G gu[] = {{17, 200, 160, 0}, {64, 1000, 1024, 0}, {100, 333, 2048, 0},
                    {300, 700, 512, 0}, {33, 5504, 4096, 0}};
    for (int i = 0; i < (small ? 2 : 5); i++)
        for (fb_dtype dt : {FB_DTYPE_BF16, FB_DTYPE_F16})
            check_e4m3_gate_up(dev, dt, gu[i].m, gu[i].n, gu[i].k, acts[(i + dt) % 5],
                               (i + dt) % 2 == 0, 2, i == 1 ? 3 : 0, seed + 500 + i);
    check_e4m3_repeat(dev, 64, 1000, 4096, 8, seed + 900);
    check_e4m3_repeat(dev, 200, 2000, 2048, 0, seed + 901);
}

/* ---- timing ------------------------------------------------------------ */

struct E4m3Set {
    void *x, *c, *bias, *hb;
    uint8_t *w, *w2;
    float *s, *s2;
    void *wbf; /* the bf16 weights of the same shape, for cuBLAS */
};

/* Median microseconds of the gemm (kernel 1 decode, 2 mid, 0 the rule)
 * over rotated weight copies. */
static double time_e4m3_gemm(Device &dev, std::vector<E4m3Set> &sets, int64_t m,
                             int64_t n, int64_t k, int kernel, int splits,
                             std::string *path, int tokens = 0)
{
    fbf_tuning t = fbf_tuning();
    t.e4m3_kernel = kernel;
    t.e4m3_splits = splits;
    t.e4m3_mid_tokens = tokens;
    Knobs kn(t);
    char buf[64] = "";
    const double us = time_us(dev.stream, 5, 60, [&](int i) {
        E4m3Set &s = sets[i % sets.size()];
        fb_e4m3_gemm_problem p;
        memset(&p, 0, sizeof p);
        p.dtype = FB_DTYPE_BF16;
        p.m = m, p.n = n, p.k = k, p.alpha = 1.0f;
        p.x = s.x, p.x_ts = k, p.x_ks = 1;
        p.w = s.w, p.w_cs = k, p.w_ks = 1;
        p.scale = s.s;
        p.c = s.c, p.c_ts = n, p.c_cs = 1;
        p.bias = s.bias;
        p.act = FB_ACT_GELU_TANH;
        fb_fp8_gemm(dev.stream, &p, buf, sizeof buf);
    });
    CK(cudaGetLastError());
    if (path)
        *path = buf;
    return us;
}

static double time_e4m3_mlp(Device &dev, std::vector<E4m3Set> &sets, int64_t m,
                            int64_t k, int64_t h, int kernel, std::string *path)
{
    fbf_tuning t = fbf_tuning();
    t.e4m3_kernel = kernel;
    Knobs kn(t);
    char buf[96] = "";
    const double us = time_us(dev.stream, 5, 60, [&](int i) {
        E4m3Set &s = sets[i % sets.size()];
        fb_e4m3_mlp_problem p;
        memset(&p, 0, sizeof p);
        p.dtype = FB_DTYPE_BF16, p.gate_act = FB_ACT_GELU_TANH;
        p.m = m, p.k = k, p.h = h, p.n = k;
        p.x = s.x, p.ldx = k;
        p.wg = s.w, p.wu = s.w + h * k, p.wd = s.w2;
        p.sg = s.s, p.su = s.s + h, p.sd = s.s2;
        p.y = s.c, p.ldy = k;
        fb_fp8_mlp(nullptr, dev.stream, &p, s.hb, (size_t)m * h * 2 + 256, buf,
                   sizeof buf, nullptr);
    });
    CK(cudaGetLastError());
    if (path)
        *path = buf;
    return us;
}

/* One shape, the mid gemm launched twice (for ncu: --launch-skip 1). */
static void e4m3_one(Device &dev, int64_t m, int64_t k, int64_t n, int splits)
{
    void *x, *c;
    uint8_t *w;
    float *s;
    CK(cudaMalloc(&x, m * k * 2));
    CK(cudaMalloc(&c, m * n * 2));
    CK(cudaMalloc(&w, n * k));
    CK(cudaMalloc(&s, n * 4));
    fill_random(FB_DTYPE_BF16, x, m * k, 1, 1.0f, dev.stream);
    fill_random(FB_DTYPE_F32, s, n, 2, 0.01f, dev.stream);
    CK(cudaMemset(w, 0x29, n * k));
    fb_e4m3_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = FB_DTYPE_BF16;
    p.m = m, p.n = n, p.k = k, p.alpha = 1.0f;
    p.x = x, p.x_ts = k, p.x_ks = 1;
    p.w = w, p.w_cs = k, p.w_ks = 1;
    p.scale = s;
    p.c = c, p.c_ts = n, p.c_cs = 1;
    p.act = FB_ACT_GELU_TANH;
    for (int i = 0; i < 2; i++)
        CK(fb_fp8_mid_gemm(dev.stream, &p, splits));
    CK(cudaStreamSynchronize(dev.stream));
    cudaFree(x); cudaFree(c); cudaFree(w); cudaFree(s);
}

static void e4m3_probe(Device &dev, bool once)
{
    const size_t l2 = (size_t)dev.prop.l2CacheSize;
    if (once) {
        /* each kernel once, for ncu / the sanitizers */
        e4m3_checks(dev, 1, true);
        return;
    }
    dev.copy_gbs = measure_copy_gbs(dev.stream);
    printf("device-to-device copy: %.0f GB/s (read + write)\n", dev.copy_gbs);
    struct S { int64_t k, n; };
    const S shapes[] = {{4096, 11008}, {11008, 4096}, {4096, 14336}, {5120, 13824}, {3008, 7000}};
    const int rows[] = {1, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048};
    std::vector<std::string> table;
    for (const S &sh : shapes) {
        const int64_t k = sh.k, n = sh.n, mmax = 2048;
        const size_t wbytes = (size_t)n * k;
        const int nsets = (int)std::max<size_t>(2, (3 * l2) / wbytes + 1);
        std::vector<E4m3Set> sets(nsets);
        for (E4m3Set &s : sets) {
            CK(cudaMalloc(&s.x, mmax * k * 2));
            CK(cudaMalloc(&s.c, mmax * n * 2));
            CK(cudaMalloc(&s.bias, n * 2));
            CK(cudaMalloc(&s.w, wbytes));
            CK(cudaMalloc(&s.s, n * 4));
            CK(cudaMalloc(&s.wbf, wbytes * 2));
            fill_random(FB_DTYPE_BF16, s.x, mmax * k, 11, 1.0f, dev.stream);
            fill_random(FB_DTYPE_BF16, s.bias, n, 12, 1.0f, dev.stream);
            fill_random(FB_DTYPE_BF16, s.wbf, wbytes, 13, 0.05f, dev.stream);
            fill_bytes_random_k<<<1024, 256, 0, dev.stream>>>(s.w, wbytes, 14);
            CK(cudaMemset(s.w, 0x31, wbytes / 2)); /* no NaN in the first half */
            fill_random(FB_DTYPE_F32, s.s, n, 15, 0.01f, dev.stream);
        }
        CK(cudaStreamSynchronize(dev.stream));
        for (int m : rows) {
            std::string pm, pr;
            const double mid = time_e4m3_gemm(dev, sets, m, n, k, 2, 0, &pm);
            const double dec = m <= 64 ? time_e4m3_gemm(dev, sets, m, n, k, 1, 0, nullptr) : 0;
            const double rule = time_e4m3_gemm(dev, sets, m, n, k, 0, 0, &pr);
            const double blas = time_us(dev.stream, 5, 60, [&](int i) {
                E4m3Set &s = sets[i % sets.size()];
                blas_linear(dev, FB_DTYPE_BF16, s.x, k, s.wbf, s.c, n, m, (int)k, (int)n);
            });
            std::string splits;
            if (m >= 64)
                for (int tk : {64, 128}) {
                    char b[32];
                    snprintf(b, sizeof b, " t%d %.1f", tk, time_e4m3_gemm(dev, sets, m, n, k, 2, 0, nullptr, tk));
                    splits += b;
                }
            if (k == 4096 && n == 11008 && (m == 32 || m == 64 || m == 128 || m == 256 || m == 1024))
                for (int sp : {1, 2, 4, 8}) {
                    char b[32];
                    snprintf(b, sizeof b, " s%d %.1f", sp, time_e4m3_gemm(dev, sets, m, n, k, 2, sp, nullptr));
                    splits += b;
                }
            const double floor_us = (double)n * k / (dev.copy_gbs * 1e3);
            char line[400];
            snprintf(line, sizeof line,
                     "gemm %5d x %5lld -> %5lld  mid %7.1f  decode %7.1f  rule %7.1f (%s)  cublas-bf16 %7.1f  floor %5.1f  mid TF/s %5.0f%s",
                     m, (long long)k, (long long)n, mid, dec, rule, pr.c_str(), blas, floor_us,
                     2.0 * m * n * k / (mid * 1e6), splits.c_str());
            printf("%s\n", line);
            fflush(stdout);
            table.push_back(line);
        }
        for (E4m3Set &s : sets) {
            cudaFree(s.x); cudaFree(s.c); cudaFree(s.bias); cudaFree(s.w); cudaFree(s.s); cudaFree(s.wbf);
        }
    }
    /* the MLP through fused_fp8_mlp.cu: 4096 -> 11008 -> 4096 */
    {
        const int64_t k = 4096, h = 11008, mmax = 2048;
        const size_t wb = (size_t)h * k;
        const int nsets = (int)std::max<size_t>(2, (3 * l2) / (3 * wb) + 1);
        std::vector<E4m3Set> sets(nsets);
        for (E4m3Set &s : sets) {
            CK(cudaMalloc(&s.x, mmax * k * 2));
            CK(cudaMalloc(&s.c, mmax * k * 2));
            CK(cudaMalloc(&s.hb, mmax * h * 2 + 256));
            CK(cudaMalloc(&s.w, 2 * wb));
            CK(cudaMalloc(&s.w2, wb));
            CK(cudaMalloc(&s.s, 2 * h * 4));
            CK(cudaMalloc(&s.s2, k * 4));
            fill_random(FB_DTYPE_BF16, s.x, mmax * k, 21, 1.0f, dev.stream);
            CK(cudaMemset(s.w, 0x29, 2 * wb));
            CK(cudaMemset(s.w2, 0x29, wb));
            fill_random(FB_DTYPE_F32, s.s, 2 * h, 22, 0.01f, dev.stream);
            fill_random(FB_DTYPE_F32, s.s2, k, 23, 0.01f, dev.stream);
        }
        CK(cudaStreamSynchronize(dev.stream));
        for (int m : rows) {
            std::string pm;
            const double mid = time_e4m3_mlp(dev, sets, m, k, h, 2, &pm);
            const double dec = m <= 64 ? time_e4m3_mlp(dev, sets, m, k, h, 1, nullptr) : 0;
            char line[300];
            snprintf(line, sizeof line, "mlp  %5d x 4096 -> 11008 -> 4096  mid %7.1f  decode %7.1f  (%s)",
                     m, mid, dec, pm.c_str());
            printf("%s\n", line);
            fflush(stdout);
            table.push_back(line);
        }
        for (E4m3Set &s : sets) {
            cudaFree(s.x); cudaFree(s.c); cudaFree(s.hb); cudaFree(s.w); cudaFree(s.w2); cudaFree(s.s); cudaFree(s.s2);
        }
    }
    printf("\n== e4m3 table (%s, copy %.0f GB/s, us, medians) ==\n", dev.prop.name, dev.copy_gbs);
    for (const std::string &l : table)
        printf("%s\n", l.c_str());
}
