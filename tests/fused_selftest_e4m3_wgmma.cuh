/* Part of fused_selftest.cu (included there): --e4m3-wgmma-probe and
 * --e4m3-wgmma-once, the e4m3 wgmma kernel (fused_fp8_wgmma.cu). */

/* ---- --e4m3-wgmma-probe / --e4m3-wgmma-once --------------------------
 * (fused_fp8_wgmma.cu) against a float64 reference of the dequantised
 * weights (ragged m, n, k; bias, activations, alpha, beta; integer data
 * bit for bit; NaN bytes and NaN activations propagating; repeats
 * bit-identical; every output written), then, unless once, timed against
 * the engine-prefill path (the weights widened in memory, then the GEMM
 * engine with the scales in its epilogue), our bf16 path on bf16 weights
 * and cuBLAS + an elementwise kernel. */

__global__ void e4m3_rand_k(uint8_t *w, size_t n, uint64_t seed, int mode)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint64_t r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
        uint8_t b;
        if (mode == 1) {
            /* small integers: +-1, 2, 3, 4 (0x38, 0x40, 0x44, 0x48) or 0 */
            const uint8_t v[5] = {0x00, 0x38, 0x40, 0x44, 0x48};
            b = v[r % 5] | (uint8_t)((r >> 8) & 1 ? 0x80 : 0);
        } else {
            b = (uint8_t)r;
            if ((b & 0x7f) == 0x7f)
                b ^= 0x08; /* no NaN unless asked for */
        }
        w[i] = b;
    }
}

template <typename T>
__global__ void int_rand_k(T *x, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint64_t r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
        x[i] = from_f<T>((float)((int)(r % 7) - 3));
    }
}

__global__ void scale_rand_k(float *s, int n, uint64_t seed, int exact)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        const uint64_t r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
        s[i] = exact ? 0.25f : (0.5f + (float)(r % 1000) / 1000.0f) / 448.0f;
    }
}

__device__ double e4m3_d(uint8_t b)
{
    return (double)fb_fp8_value(b);
}

/* ref(i, j) for the gemm (dual: H), float64 of the stored values */
template <typename T>
__global__ void e4m3_ref_k(const T *x, int64_t ldx, const uint8_t *w,
                           const uint8_t *w2, const float *s, const float *s2,
                           const T *b, const T *b2, const T *c, int64_t ldc,
                           int m, int n, int k, double alpha, double beta,
                           fb_activation act, bool dual, double *ref)
{
    const int64_t total = (int64_t)m * n;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int i = (int)(q / n), j = (int)(q % n);
        double d = 0, d2 = 0;
        for (int p = 0; p < k; ++p) {
            const double xv = (double)fb_load_f32(x[(int64_t)i * ldx + p]);
            d += xv * e4m3_d(w[(int64_t)j * k + p]);
            if (dual)
                d2 += xv * e4m3_d(w2[(int64_t)j * k + p]);
        }
        double v;
        if (dual) {
            double gv = d * s[j] + (b ? (double)fb_load_f32(b[j]) : 0.0);
            double uv = d2 * s2[j] + (b2 ? (double)fb_load_f32(b2[j]) : 0.0);
            v = act_d(act, gv) * uv;
        } else {
            v = alpha * (d * s[j]);
            if (beta != 0.0)
                v += beta * (double)fb_load_f32(c[(int64_t)i * ldc + j]);
            if (b)
                v += (double)fb_load_f32(b[j]);
            v = act_d(act, v);
        }
        ref[q] = v;
    }
}

/* widened copy (the engine-prefill path's pass), rows of k bytes */
template <typename T>
__global__ void e4m3_widen_k(const uint8_t *w, size_t n, T *out)
{
    for (size_t v = blockIdx.x * (size_t)blockDim.x + threadIdx.x; v < n / 16;
         v += (size_t)gridDim.x * blockDim.x) {
        const uint4 b = __ldcs((const uint4 *)w + v);
        const uint32_t in[4] = {b.x, b.y, b.z, b.w};
        uint32_t o[8];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            o[2 * q] = fb_fp8_pair<T>(in[q]);
            o[2 * q + 1] = fb_fp8_pair<T>(in[q] >> 16);
        }
        ((uint4 *)out)[2 * v] = make_uint4(o[0], o[1], o[2], o[3]);
        ((uint4 *)out)[2 * v + 1] = make_uint4(o[4], o[5], o[6], o[7]);
    }
}

static void e4m3_widen(cudaStream_t s, fb_dtype d, const uint8_t *w, size_t n,
                       void *out)
{
    if (d == FB_DTYPE_BF16)
        e4m3_widen_k<__nv_bfloat16><<<4 * 132, 256, 0, s>>>(w, n, (__nv_bfloat16 *)out);
    else
        e4m3_widen_k<__half><<<4 * 132, 256, 0, s>>>(w, n, (__half *)out);
}

/* compare T output (m x n at ldc) with ref; exact: bit for bit with the
 * reference rounded to T */
static bool e4m3_compare(fb_dtype d, const std::vector<unsigned char> &out,
                         int64_t ldc, const std::vector<double> &ref, int m,
                         int n, bool exact, double tol, const char *label)
{
    double num = 0, den = 0;
    int64_t bad = 0, inexact = 0;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            const double r = ref[(size_t)i * n + j];
            const double o = host_to_double(d, out.data(), (size_t)i * ldc + j);
            if (std::isfinite(r) != std::isfinite(o) ||
                (std::isnan(r) != std::isnan(o))) {
                ++bad;
                continue;
            }
            if (!std::isfinite(r))
                continue;
            if (exact) {
                std::vector<unsigned char> one(2);
                host_store(d, one.data(), 0, (float)r);
                if (memcmp(one.data(), out.data() + 2 * ((size_t)i * ldc + j), 2))
                    ++inexact;
            }
            num += (o - r) * (o - r);
            den += r * r;
        }
    const double err = den > 0 ? sqrt(num / den) : sqrt(num);
    const bool ok = bad == 0 && inexact == 0 && err <= tol;
    report(ok, "e4m3-wgmma %s: err %.2e (tol %.1e), %lld non-finite mismatches%s%lld",
           label, err, tol, (long long)bad, exact ? ", not bit-exact: " : "",
           exact ? (long long)inexact : 0LL);
    return ok;
}

struct E4Gemm {
    fb_dtype d;
    int m, n, k;
    int64_t ldx, ldc;
    float alpha, beta;
    fb_activation act;
    bool bias;
    int mode; /* 0 random, 1 integers (exact), 2 NaN bytes and a NaN row */
};

static void e4m3_check_gemm(Device &dev, const E4Gemm &c, uint64_t seed, int bn, int splits = 0)
{
    char label[160];
    snprintf(label, sizeof label, "gemm %s %d x %d -> %d ldx %lld ldc %lld a %.2f b %.2f %s%s%s bn %d splits %d%s",
             dname(c.d), c.m, c.k, c.n, (long long)c.ldx, (long long)c.ldc, c.alpha, c.beta,
             aname(c.act), c.bias ? " bias" : "", c.mode == 1 ? " integers" : c.mode == 2 ? " NaN" : "", bn,
             splits, fbf_knobs.e4m3_mcast == 1 ? " own-X" : "");
    g_current = label;
    cudaStream_t s = dev.stream;
    const size_t xb = (size_t)c.m * c.ldx * 2, cb = (size_t)c.m * c.ldc * 2;
    void *x, *cc, *bias;
    uint8_t *w;
    float *sc;
    double *ref;
    CK(cudaMalloc(&x, xb));
    CK(cudaMalloc(&cc, cb));
    CK(cudaMalloc(&bias, (size_t)c.n * 2));
    CK(cudaMalloc(&w, (size_t)c.n * c.k));
    CK(cudaMalloc(&sc, (size_t)c.n * 4));
    CK(cudaMalloc(&ref, (size_t)c.m * c.n * 8));
    if (c.mode == 1) {
        if (c.d == FB_DTYPE_BF16)
            int_rand_k<__nv_bfloat16><<<256, 256, 0, s>>>((__nv_bfloat16 *)x, xb / 2, seed);
        else
            int_rand_k<__half><<<256, 256, 0, s>>>((__half *)x, xb / 2, seed);
    } else {
        fill_random(c.d, x, xb / 2, seed, 1.0f, s);
    }
    e4m3_rand_k<<<256, 256, 0, s>>>(w, (size_t)c.n * c.k, seed + 1, c.mode == 1);
    scale_rand_k<<<16, 256, 0, s>>>(sc, c.n, seed + 2, c.mode == 1);
    fill_random(c.d, bias, c.n, seed + 3, 0.5f, s);
    fill_random(c.d, cc, cb / 2, seed + 4, 1.0f, s);
    CK(cudaGetLastError());
    if (c.mode == 2) {
        /* a NaN weight byte in channel 5 (either sign), a NaN in x row 7 */
        const uint8_t nanb = 0xff;
        CK(cudaMemcpyAsync(w + (size_t)5 * c.k + c.k / 3, &nanb, 1, cudaMemcpyHostToDevice, s));
        const uint16_t xn = 0x7fff;
        CK(cudaMemcpyAsync((char *)x + ((size_t)7 * c.ldx + c.k - 1) * 2, &xn, 2, cudaMemcpyHostToDevice, s));
        CK(cudaStreamSynchronize(s));
    }
    /* C's input copy for beta, the output poisoned where beta == 0 */
    std::vector<unsigned char> cin = download(cc, cb, s);
    if (c.beta == 0.0f)
        CK(cudaMemsetAsync(cc, 0xff, cb, s));
    if (c.d == FB_DTYPE_BF16)
        e4m3_ref_k<__nv_bfloat16><<<1024, 256, 0, s>>>((const __nv_bfloat16 *)x, c.ldx, w, NULL, sc, NULL,
            c.bias ? (const __nv_bfloat16 *)bias : NULL, NULL, (const __nv_bfloat16 *)cc, c.ldc,
            c.m, c.n, c.k, c.alpha, c.beta, c.act, false, ref);
    else
        e4m3_ref_k<__half><<<1024, 256, 0, s>>>((const __half *)x, c.ldx, w, NULL, sc, NULL,
            c.bias ? (const __half *)bias : NULL, NULL, (const __half *)cc, c.ldc,
            c.m, c.n, c.k, c.alpha, c.beta, c.act, false, ref);
    CK(cudaGetLastError());
    fb_e4m3_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = c.d;
    p.m = c.m, p.n = c.n, p.k = c.k;
    p.alpha = c.alpha, p.beta = c.beta;
    p.x = x, p.x_ts = c.ldx, p.x_ks = 1;
    p.w = w, p.w_cs = c.k, p.w_ks = 1;
    p.scale = sc;
    p.c = cc, p.c_ts = c.ldc, p.c_cs = 1;
    p.bias = c.bias ? bias : NULL;
    p.act = c.act;
    char path[64] = "";
    fb_status st = fbf_e4m3_wgmma_gemm(&dev.env, &p, bn, splits, path, sizeof path);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    if (st != FB_STATUS_SUCCESS) {
        report(false, "e4m3-wgmma %s: status %d", label, (int)st);
    } else {
        std::vector<double> r(c.m * (size_t)c.n);
        CK(cudaMemcpy(r.data(), ref, r.size() * 8, cudaMemcpyDeviceToHost));
        std::vector<unsigned char> out = download(cc, cb, s);
        const double tol = c.mode == 1 ? 0.0 : tolerance(c.d, c.k, 1);
        e4m3_compare(c.d, out, c.ldc, r, c.m, c.n, c.mode == 1, c.mode == 1 ? 1.0 : tol, label);
        if (c.mode == 2) {
            /* channel 5 NaN in every row, row 7 NaN in every channel */
            int64_t nn = 0;
            for (int i = 0; i < c.m; ++i)
                nn += std::isnan(host_to_double(c.d, out.data(), (size_t)i * c.ldc + 5));
            for (int j = 0; j < c.n; ++j)
                nn += std::isnan(host_to_double(c.d, out.data(), (size_t)7 * c.ldc + j));
            report(nn == c.m + c.n, "e4m3-wgmma %s: NaN propagated to %lld of %d outputs",
                   label, (long long)nn, c.m + c.n);
        }
        /* the columns past n in C's rows untouched */
        int64_t touched = 0;
        for (int i = 0; i < c.m; ++i)
            for (int64_t j = c.n; j < c.ldc; ++j)
                touched += memcmp(out.data() + 2 * (i * c.ldc + j),
                                  (c.beta == 0.0f ? std::vector<unsigned char>(2, 0xff).data()
                                                  : cin.data() + 2 * (i * c.ldc + j)), 2) != 0;
        report(touched == 0, "e4m3-wgmma %s: padding untouched (%lld changed)", label, (long long)touched);
        if (c.beta == 0.0f) {
            /* a second run: the same bits */
            CK(cudaMemsetAsync(cc, 0xff, cb, s));
            st = fbf_e4m3_wgmma_gemm(&dev.env, &p, bn, splits, path, sizeof path);
            std::vector<unsigned char> again = download(cc, cb, s);
            report(st == FB_STATUS_SUCCESS && again == out, "e4m3-wgmma %s: repeat bit-identical", label);
        }
    }
    cudaFree(x); cudaFree(cc); cudaFree(bias); cudaFree(w); cudaFree(sc); cudaFree(ref);
}

static void e4m3_check_gate_up(Device &dev, fb_dtype d, int m, int k, int h, fb_activation act,
                               bool bias, uint64_t seed, int bn)
{
    char label[160];
    snprintf(label, sizeof label, "gate-up %s %d x %d -> %d %s%s bn %d%s", dname(d), m, k, h,
             aname(act), bias ? " bias" : "", bn,
             fbf_knobs.e4m3_mcast == 1 ? " own-X" : "");
    g_current = label;
    cudaStream_t s = dev.stream;
    void *x, *hb, *bg, *bu;
    uint8_t *wg, *wu;
    float *sg, *su;
    double *ref;
    const int64_t ldx = k + 8;
    CK(cudaMalloc(&x, (size_t)m * ldx * 2));
    CK(cudaMalloc(&hb, (size_t)m * h * 2));
    CK(cudaMalloc(&bg, (size_t)h * 2));
    CK(cudaMalloc(&bu, (size_t)h * 2));
    CK(cudaMalloc(&wg, (size_t)h * k));
    CK(cudaMalloc(&wu, (size_t)h * k));
    CK(cudaMalloc(&sg, (size_t)h * 4));
    CK(cudaMalloc(&su, (size_t)h * 4));
    CK(cudaMalloc(&ref, (size_t)m * h * 8));
    fill_random(d, x, (size_t)m * ldx, seed, 1.0f, s);
    e4m3_rand_k<<<256, 256, 0, s>>>(wg, (size_t)h * k, seed + 1, 0);
    e4m3_rand_k<<<256, 256, 0, s>>>(wu, (size_t)h * k, seed + 2, 0);
    scale_rand_k<<<16, 256, 0, s>>>(sg, h, seed + 3, 0);
    scale_rand_k<<<16, 256, 0, s>>>(su, h, seed + 4, 0);
    fill_random(d, bg, h, seed + 5, 0.5f, s);
    fill_random(d, bu, h, seed + 6, 0.5f, s);
    CK(cudaMemsetAsync(hb, 0xff, (size_t)m * h * 2, s));
    if (d == FB_DTYPE_BF16)
        e4m3_ref_k<__nv_bfloat16><<<1024, 256, 0, s>>>((const __nv_bfloat16 *)x, ldx, wg, wu, sg, su,
            bias ? (const __nv_bfloat16 *)bg : NULL, bias ? (const __nv_bfloat16 *)bu : NULL, NULL, 0,
            m, h, k, 1.0, 0.0, act, true, ref);
    else
        e4m3_ref_k<__half><<<1024, 256, 0, s>>>((const __half *)x, ldx, wg, wu, sg, su,
            bias ? (const __half *)bg : NULL, bias ? (const __half *)bu : NULL, NULL, 0,
            m, h, k, 1.0, 0.0, act, true, ref);
    CK(cudaGetLastError());
    fb_e4m3_mlp_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = d;
    p.gate_act = act;
    p.m = m, p.k = k, p.h = h, p.n = 0;
    p.x = x, p.ldx = ldx;
    p.wg = wg, p.wu = wu, p.sg = sg, p.su = su;
    p.bg = bias ? bg : NULL, p.bu = bias ? bu : NULL;
    fb_status st = fbf_e4m3_wgmma_gate_up(&dev.env, &p, hb, bn);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    if (st != FB_STATUS_SUCCESS) {
        report(false, "e4m3-wgmma %s: status %d", label, (int)st);
    } else {
        std::vector<double> r((size_t)m * h);
        CK(cudaMemcpy(r.data(), ref, r.size() * 8, cudaMemcpyDeviceToHost));
        std::vector<unsigned char> out = download(hb, (size_t)m * h * 2, s);
        e4m3_compare(d, out, h, r, m, h, false, tolerance(d, k, 2), label);
        CK(cudaMemsetAsync(hb, 0xff, (size_t)m * h * 2, s));
        st = fbf_e4m3_wgmma_gate_up(&dev.env, &p, hb, bn);
        std::vector<unsigned char> again = download(hb, (size_t)m * h * 2, s);
        report(st == FB_STATUS_SUCCESS && again == out, "e4m3-wgmma %s: repeat bit-identical", label);
    }
    cudaFree(x); cudaFree(hb); cudaFree(bg); cudaFree(bu); cudaFree(wg); cudaFree(wu);
    cudaFree(sg); cudaFree(su); cudaFree(ref);
}

/* timing: gemm m x k -> n, bf16, bias + gelu_tanh */
static void e4m3_time_gemm(Device &dev, int m, int k, int n)
{
    const fb_dtype d = FB_DTYPE_BF16;
    cudaStream_t s = dev.stream;
    const int sets = 3;
    void *x, *y, *bias, *wide;
    uint8_t *w[sets];
    float *sc;
    CK(cudaMalloc(&x, (size_t)m * k * 2));
    CK(cudaMalloc(&y, (size_t)m * n * 2));
    CK(cudaMalloc(&bias, (size_t)n * 2));
    CK(cudaMalloc(&sc, (size_t)n * 4));
    CK(cudaMalloc(&wide, (size_t)n * k * 2 * 2)); /* two bf16 sets */
    for (int i = 0; i < sets; ++i) {
        CK(cudaMalloc(&w[i], (size_t)n * k));
        e4m3_rand_k<<<1024, 256, 0, s>>>(w[i], (size_t)n * k, 77 + i, 0);
    }
    fill_random(d, x, (size_t)m * k, 5, 1.0f, s);
    fill_random(d, bias, n, 6, 0.5f, s);
    scale_rand_k<<<64, 256, 0, s>>>(sc, n, 7, 0);
    e4m3_widen(s, d, w[0], (size_t)n * k, wide);
    e4m3_widen(s, d, w[1], (size_t)n * k, (char *)wide + (size_t)n * k * 2);
    CK(cudaStreamSynchronize(s));
    fb_e4m3_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = d;
    p.m = m, p.n = n, p.k = k;
    p.alpha = 1.0f;
    p.x = x, p.x_ts = k, p.x_ks = 1;
    p.w_cs = k, p.w_ks = 1;
    p.scale = sc;
    p.c = y, p.c_ts = n, p.c_cs = 1;
    p.bias = bias;
    p.act = FB_ACT_GELU_TANH;
    char path[64];
    const int iters = m >= 4096 ? 15 : 30;
    /* v: 0 the plan, 1..3 BN 64 / 128 / 256 unsplit, 4 the plan with each
     * CTA loading its own X tile; 5..7 BN 64 / 128 / 256 the same */
    double t_new[8];
    const int bns[8] = {0, 64, 128, 256, 0, 64, 128, 256};
    char auto_path[64] = "", own_path[64] = "";
    for (int v = 0; v < 8; ++v) {
        fbf_knobs.e4m3_mcast = v >= 4 ? 1 : 0;
        t_new[v] = time_us(s, 3, iters, [&](int i) {
            p.w = w[i % sets];
            if (fbf_e4m3_wgmma_gemm(&dev.env, &p, bns[v], v == 0 || v == 4 ? 0 : 1, path, sizeof path) != FB_STATUS_SUCCESS)
                CK(cudaErrorUnknown);
            if (v == 0)
                snprintf(auto_path, sizeof auto_path, "%s", path);
            if (v == 4)
                snprintf(own_path, sizeof own_path, "%s", path);
        });
    }
    fbf_knobs.e4m3_mcast = 0;
    /* the engine on the widened weights: the old path's GEMM (+ its pass) */
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = d;
    g.transa = 1, g.transb = 0;
    g.m = n, g.n = m, g.k = k;
    g.alpha = 1.0f, g.beta = 0.0f;
    g.lda = k;
    g.b = x, g.ldb = k;
    g.c = y, g.ldc = n;
    g.ep.act = FB_ACT_GELU_TANH;
    g.ep.bias_per_row = 1;
    g.ep.bias = bias;
    fb_gemm_decide(&g);
    const double t_old = time_us(s, 3, iters, [&](int i) {
        e4m3_widen(s, d, w[i % sets], (size_t)n * k, wide);
        g.a = wide;
        if (fbf_gemm_sm90_scaled(&dev.env, &g, sc, NULL, 0) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
    });
    char bpath[64] = "";
    const double t_bf16 = time_us(s, 3, iters, [&](int i) {
        g.a = (char *)wide + (size_t)(i % 2) * n * k * 2;
        if (fbf_gemm_sm90(&dev.env, &g, FBF_RUN, bpath, sizeof bpath) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
    });
    const double t_blas = time_us(s, 3, iters, [&](int i) {
        blas_linear(dev, d, x, k, (char *)wide + (size_t)(i % 2) * n * k * 2, y, n, m, k, n);
        base_bias_act_k<__nv_bfloat16><<<1024, 256, 0, s>>>((__nv_bfloat16 *)y,
            (const __nv_bfloat16 *)bias, m, n, FB_ACT_GELU_TANH);
    });
    /* the mid kernel, where it can run the call (up to its row limit) */
    double t_mid = 0.0;
    if (m <= FB_FP8_MID_MAX_ROWS && fb_fp8_mid_gemm_applies(&p))
        t_mid = time_us(s, 3, iters, [&](int i) {
            p.w = w[i % sets];
            CK(fb_fp8_mid_gemm(s, &p, 0));
        });
    char line[520];
    snprintf(line, sizeof line,
             "gemm %5d x %5d -> %5d: wgmma %7.1f %s (own X %7.1f %s; rule/own X bn64 %7.1f/%7.1f bn128 %7.1f/%7.1f bn256 %7.1f/%7.1f)  "
             "mid %7.1f  old %7.1f  bf16 %7.1f  cublas+ew %7.1f  new/old %.2fx new vs bf16 %.2fx",
             m, k, n, t_new[0], auto_path + sizeof "cuda-fused/e4m3-" - 1, t_new[4],
             own_path + sizeof "cuda-fused/e4m3-" - 1, t_new[1], t_new[5], t_new[2], t_new[6],
             t_new[3], t_new[7], t_mid, t_old, t_bf16, t_blas, t_old / t_new[0], t_bf16 / t_new[0]);
    printf("%s\n", line);
    fflush(stdout);
    g_tune_lines.push_back(line);
    cudaFree(x); cudaFree(y); cudaFree(bias); cudaFree(sc); cudaFree(wide);
    for (int i = 0; i < sets; ++i)
        cudaFree(w[i]);
}

/* timing: MLP m x k -> h -> k (gelu_tanh, no biases), bf16 */
static void e4m3_time_mlp(Device &dev, int m, int k, int h)
{
    const fb_dtype d = FB_DTYPE_BF16;
    cudaStream_t s = dev.stream;
    const int n = k;
    void *x, *y, *hb, *wide, *g16, *u16;
    uint8_t *wg, *wu, *wd;
    float *sg, *su, *sd;
    CK(cudaMalloc(&x, (size_t)m * k * 2));
    CK(cudaMalloc(&y, (size_t)m * n * 2));
    CK(cudaMalloc(&hb, (size_t)m * h * 2));
    CK(cudaMalloc(&g16, (size_t)m * h * 2));
    CK(cudaMalloc(&u16, (size_t)m * h * 2));
    CK(cudaMalloc(&wide, (size_t)3 * h * k * 2));
    CK(cudaMalloc(&wg, (size_t)h * k));
    CK(cudaMalloc(&wu, (size_t)h * k));
    CK(cudaMalloc(&wd, (size_t)n * h));
    CK(cudaMalloc(&sg, (size_t)h * 4));
    CK(cudaMalloc(&su, (size_t)h * 4));
    CK(cudaMalloc(&sd, (size_t)n * 4));
    e4m3_rand_k<<<1024, 256, 0, s>>>(wg, (size_t)h * k, 11, 0);
    e4m3_rand_k<<<1024, 256, 0, s>>>(wu, (size_t)h * k, 12, 0);
    e4m3_rand_k<<<1024, 256, 0, s>>>(wd, (size_t)n * h, 13, 0);
    scale_rand_k<<<64, 256, 0, s>>>(sg, h, 14, 0);
    scale_rand_k<<<64, 256, 0, s>>>(su, h, 15, 0);
    scale_rand_k<<<64, 256, 0, s>>>(sd, n, 16, 0);
    fill_random(d, x, (size_t)m * k, 17, 1.0f, s);
    CK(cudaStreamSynchronize(s));
    fb_e4m3_mlp_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = d;
    p.gate_act = FB_ACT_GELU_TANH;
    p.m = m, p.k = k, p.h = h, p.n = n;
    p.x = x, p.ldx = k;
    p.wg = wg, p.wu = wu, p.wd = wd, p.sg = sg, p.su = su, p.sd = sd;
    p.y = y, p.ldy = n;
    fb_e4m3_gemm_problem dn;
    memset(&dn, 0, sizeof dn);
    dn.dtype = d;
    dn.m = m, dn.n = n, dn.k = h;
    dn.alpha = 1.0f;
    dn.x = hb, dn.x_ts = h, dn.x_ks = 1;
    dn.w = wd, dn.w_cs = h, dn.w_ks = 1;
    dn.scale = sd;
    dn.c = y, dn.c_ts = n, dn.c_cs = 1;
    dn.act = FB_ACT_NONE;
    const int iters = m >= 4096 ? 10 : 20;
    char path[64];
    double t_mc[2], t_gmc[2];
    for (int mc = 0; mc < 2; ++mc) {
        fbf_knobs.e4m3_mcast = mc ? 0 : 1; /* [0]: own X tiles, [1]: the rule */
        t_mc[mc] = time_us(s, 3, iters, [&](int) {
            if (fbf_e4m3_wgmma_gate_up(&dev.env, &p, hb, 0) != FB_STATUS_SUCCESS ||
                fbf_e4m3_wgmma_gemm(&dev.env, &dn, 0, 0, path, sizeof path) != FB_STATUS_SUCCESS)
                CK(cudaErrorUnknown);
        });
        t_gmc[mc] = time_us(s, 3, iters, [&](int) {
            if (fbf_e4m3_wgmma_gate_up(&dev.env, &p, hb, 0) != FB_STATUS_SUCCESS)
                CK(cudaErrorUnknown);
        });
    }
    fbf_knobs.e4m3_mcast = 0;
    /* the gate-and-up in pairs at each BN */
    double t_gbn[3];
    for (int bi = 0; bi < 3; ++bi)
        t_gbn[bi] = time_us(s, 3, iters, [&](int) {
            if (fbf_e4m3_wgmma_gate_up(&dev.env, &p, hb, 64 << bi) != FB_STATUS_SUCCESS)
                CK(cudaErrorUnknown);
        });
    const double t_new = t_mc[1], t_gu = t_gmc[1];
    /* old: Wg, Wu widened side by side, the engine's dual GEMM with the
     * scales, Wd widened, the engine's scaled GEMM */
    fb_mlp_problem q;
    memset(&q, 0, sizeof q);
    q.dtype = d;
    q.gate_act = FB_ACT_GELU_TANH;
    q.m = m, q.k = k, q.h = h, q.n = 0;
    q.x = x, q.ldx = k;
    q.wg = wide, q.wu = (char *)wide + (size_t)h * k * 2;
    fb_gemm_problem g;
    memset(&g, 0, sizeof g);
    g.dtype = d;
    g.transa = 1, g.transb = 0;
    g.m = n, g.n = m, g.k = h;
    g.alpha = 1.0f;
    g.lda = h;
    g.b = hb, g.ldb = h;
    g.c = y, g.ldc = n;
    g.ep.act = FB_ACT_NONE;
    g.ep.bias_per_row = 1;
    fb_gemm_decide(&g);
    g.a = (char *)wide + (size_t)2 * h * k * 2;
    const double t_old = time_us(s, 3, iters, [&](int) {
        e4m3_widen(s, d, wg, (size_t)h * k, wide);
        e4m3_widen(s, d, wu, (size_t)h * k, (char *)wide + (size_t)h * k * 2);
        if (fbf_mlp_hidden_sm90(&dev.env, &q, sg, su, hb, h, (size_t)m * h * 2, NULL, 0) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
        e4m3_widen(s, d, wd, (size_t)n * h, (char *)wide + (size_t)2 * h * k * 2);
        if (fbf_gemm_sm90_scaled(&dev.env, &g, sd, NULL, 0) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
    });
    /* bf16 weights (the widened copies): the engine's MLP and the prefill
     * wgmma MLP, and cuBLAS + eager */
    fb_mlp_problem b = q;
    b.n = n;
    b.wd = (char *)wide + (size_t)2 * h * k * 2;
    b.y = y, b.ldy = n;
    char p1[64] = "", p2[64] = "";
    const double t_eng = time_us(s, 3, iters, [&](int) {
        if (fbf_mlp_sm90(&dev.env, &b, hb, (size_t)m * h * 2, FBF_RUN, p1, sizeof p1) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
    });
    const double t_pw = time_us(s, 3, iters, [&](int) {
        if (fbf_prefill_mlp_wgmma(&dev.env, &b, hb, (size_t)m * h * 2, FBF_RUN, p2, sizeof p2) != FB_STATUS_SUCCESS)
            CK(cudaErrorUnknown);
    });
    const double t_blas = time_us(s, 3, iters, [&](int) {
        blas_linear(dev, d, x, k, q.wg, g16, h, m, k, h);
        blas_linear(dev, d, x, k, q.wu, u16, h, m, k, h);
        base_gate_k<__nv_bfloat16><<<1024, 256, 0, s>>>((__nv_bfloat16 *)g16, (const __nv_bfloat16 *)u16,
            NULL, NULL, m, h, FB_ACT_GELU_TANH);
        blas_linear(dev, d, g16, h, b.wd, y, n, m, h, n);
    });
    /* the mid kernel's gate and up, the down projection as the MLP runs
     * it (the mid kernel where the rule says so, else the wgmma kernel) */
    double t_mid = 0.0, t_mid_gu = 0.0;
    if (m <= FB_FP8_MID_MAX_ROWS && fb_fp8_mid_gate_up_applies(&p)) {
        const bool mid_down = fb_fp8_mid_rows(m, h, n) && fb_fp8_mid_gemm_applies(&dn);
        t_mid = time_us(s, 3, iters, [&](int) {
            CK(fb_fp8_mid_gate_up(s, &p, hb, 0));
            if (mid_down)
                CK(fb_fp8_mid_gemm(s, &dn, 0));
            else if (fbf_e4m3_wgmma_gemm(&dev.env, &dn, 0, 0, path, sizeof path) != FB_STATUS_SUCCESS)
                CK(cudaErrorUnknown);
        });
        t_mid_gu = time_us(s, 3, iters, [&](int) { CK(fb_fp8_mid_gate_up(s, &p, hb, 0)); });
    }
    char line[520];
    snprintf(line, sizeof line,
             "mlp  %5d x %5d -> %5d -> %5d: wgmma %7.1f (gate-up %7.1f; own X %7.1f, gate-up %7.1f; "
             "gate-up pairs bn64 %7.1f bn128 %7.1f bn256 %7.1f)  mid %7.1f (gate-up %7.1f)  "
             "old %7.1f  bf16 engine %7.1f  "
             "bf16 prefill-wgmma %7.1f  cublas+ew %7.1f  new/old %.2fx new vs best bf16 %.2fx",
             m, k, h, n, t_new, t_gu, t_mc[0], t_gmc[0], t_gbn[0], t_gbn[1], t_gbn[2], t_mid, t_mid_gu,
             t_old, t_eng, t_pw, t_blas, t_old / t_new,
             std::min(t_eng, t_pw) / t_new);
    printf("%s\n", line);
    fflush(stdout);
    g_tune_lines.push_back(line);
    cudaFree(x); cudaFree(y); cudaFree(hb); cudaFree(g16); cudaFree(u16); cudaFree(wide);
    cudaFree(wg); cudaFree(wu); cudaFree(wd); cudaFree(sg); cudaFree(su); cudaFree(sd);
}

static void e4m3_wgmma_probe(Device &dev, bool once, uint64_t seed)
{
    const fb_dtype ds[2] = {FB_DTYPE_BF16, FB_DTYPE_F16};
    if (once) {
        /* small shapes, for compute-sanitizer; X tiles shared by channel
         * pairs (the rule) and loaded by each CTA */
        for (int mc : {0, 1})
        for (int di = 0; di < 2; ++di)
            for (int bn : {64, 256}) {
                fbf_knobs.e4m3_mcast = mc;
                e4m3_check_gemm(dev, E4Gemm{ds[di], 129, 200, 144, 152, 201, 1.0f, 0.0f, FB_ACT_RELU, true, 2}, seed++, bn);
                e4m3_check_gemm(dev, E4Gemm{ds[di], 300, 136, 512, 512, 136, 0.5f, 0.25f, FB_ACT_GELU_TANH, true, 0}, seed++, bn);
                e4m3_check_gemm(dev, E4Gemm{ds[di], 150, 72, 1024, 1032, 80, 1.0f, 0.5f, FB_ACT_SILU, true, 0}, seed++, bn, 4);
                e4m3_check_gate_up(dev, ds[di], 70, 256, 130, FB_ACT_SILU, true, seed++, bn);
            }
        fbf_knobs.e4m3_mcast = 0;
        return;
    }
    for (int di = 0; di < 2; ++di) {
        const fb_dtype d = ds[di];
        for (int mc : {0, 1})
        for (int bn : {64, 128, 256}) {
            fbf_knobs.e4m3_mcast = mc;
            e4m3_check_gemm(dev, E4Gemm{d, 777, 1000, 1008, 1016, 1003, 0.75f, 0.5f, FB_ACT_GELU_TANH, true, 0}, seed++, bn);
            e4m3_check_gemm(dev, E4Gemm{d, 300, 260, 512, 512, 260, 1.0f, 0.0f, FB_ACT_NONE, false, 1}, seed++, bn);
            e4m3_check_gemm(dev, E4Gemm{d, 129, 200, 144, 152, 201, 1.0f, 0.0f, FB_ACT_RELU, true, 2}, seed++, bn);
            e4m3_check_gate_up(dev, d, 333, 1024, 700, FB_ACT_SILU, true, seed++, bn);
        }
        fbf_knobs.e4m3_mcast = 0;
        e4m3_check_gemm(dev, E4Gemm{d, 1, 64, 16, 16, 64, 1.0f, 0.0f, FB_ACT_GELU_ERF, true, 0}, seed++, 0);
        e4m3_check_gemm(dev, E4Gemm{d, 2000, 1111, 2064, 2064, 1111, -1.5f, 0.0f, FB_ACT_SILU, true, 0}, seed++, 0);
        /* k split over clusters: each size, ragged k, beta, integers, NaN */
        for (int sp : {2, 4, 8}) {
            e4m3_check_gemm(dev, E4Gemm{d, 333, 300, 2064, 2072, 304, 0.75f, 0.5f, FB_ACT_GELU_TANH, true, 0}, seed++, 64, sp);
            e4m3_check_gemm(dev, E4Gemm{d, 200, 136, 1024, 1024, 136, 1.0f, 0.0f, FB_ACT_NONE, false, 1}, seed++, 128, sp);
            e4m3_check_gemm(dev, E4Gemm{d, 129, 200, 1040, 1048, 201, 1.0f, 0.0f, FB_ACT_RELU, true, 2}, seed++, 256, sp);
        }
        e4m3_check_gemm(dev, E4Gemm{d, 160, 4096, 11008, 11008, 4096, 1.0f, 0.0f, FB_ACT_GELU_TANH, true, 0}, seed++, 0, 0);
        e4m3_check_gate_up(dev, d, 70, 4096, 130, FB_ACT_GELU_TANH, false, seed++, 0);
    }
    dev.copy_gbs = measure_copy_gbs(dev.stream);
    printf("device-to-device copy: %.0f GB/s (read + write)\n", dev.copy_gbs);
    for (int m : {128, 160, 192, 256, 384, 512, 1024, 2048, 4096})
        e4m3_time_gemm(dev, m, 4096, 11008);
    for (int m : {128, 192, 512, 2048})
        e4m3_time_gemm(dev, m, 11008, 4096);
    for (int m : {128, 192, 256})
        e4m3_time_gemm(dev, m, 4096, 4096);
    for (int m : {128, 192})
        e4m3_time_gemm(dev, m, 4096, 2048);
    for (int m : {128, 256})
        e4m3_time_gemm(dev, m, 14336, 4096);
    for (int m : {128, 192, 256, 384, 512, 768, 1024, 2048})
        e4m3_time_mlp(dev, m, 4096, 11008);
    for (int m : {192, 512})
        e4m3_time_mlp(dev, m, 4096, 14336);
}
