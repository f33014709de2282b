/* The small operations of a Qwen3 decode step, one call each where torch dispatches dozens.
 *
 * At one token a step, a layer of the compact forward (engine/model/fast_forward.py) is four
 * products (torch's int8 or float kernels, left as they are) and, between them, norms, the
 * rotary embedding, the cache write, attention and the MLP's gate: about forty small torch ops
 * a layer, a thousand a step, each paying Python's and torch's dispatch. Here they are three
 * plain loops over fp32 rows, called through ctypes (engine/model/native.py compiles this file
 * at first use with the machine's C compiler):
 *
 *   add_norm     hidden += delta; out = weight * rms_norm(hidden)      (before each product)
 *   attend_step  q and k heads normed and rotated, k and v written into the cache (fp32 or bf16),
 *                attention of every query head over its key/value head's cached positions
 *   silu_mul     out = silu(gate) * up
 *   int8_rows    y = x @ W.T for W in int8 rows, each with its scale (prepared weights: int8_prepared.py)
 *
 * The arithmetic is Qwen3's, in transformers' order, in fp32; only summation order differs from
 * torch's kernels. Attention runs its key/value heads in parallel on the OpenMP runtime torch
 * itself uses (native.py links against torch's own libgomp), on the thread count it is given.
 */
#include <math.h>
#include <stdint.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__FAST_MATH__)
/* glibc's vector expf (libmvec), which math.h declares only under -ffast-math: the simd loops below call it */
__attribute__((simd("notinbranch"))) float expf(float);
#endif

/* bf16 <-> fp32: bf16 is the top half of an fp32; rounding to nearest even, as torch's .to(bfloat16) */
static inline float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u); /* NaN stays NaN */
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static inline float mean_square(const float *x, int n) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) sum += x[i] * x[i];
    return sum / (float)n;
}

/* hidden += delta (when delta is not NULL); out = weight * (hidden * rsqrt(mean(hidden^2) + eps)) */
void add_norm(float *hidden, const float *delta, const float *weight, float *out, int n, float eps) {
    if (delta) {
#pragma omp simd
        for (int i = 0; i < n; i++) hidden[i] += delta[i];
    }
    const float inv = 1.0f / sqrtf(mean_square(hidden, n) + eps);
#pragma omp simd
    for (int i = 0; i < n; i++) out[i] = weight[i] * (hidden[i] * inv);
}

/* out[i] = silu(gate[i]) * up[i], with gate_up holding gate (width values) then up (width values) */
void silu_mul(const float *gate_up, float *out, int width) {
    const float *up = gate_up + width;
#pragma omp simd
    for (int i = 0; i < width; i++) {
        const float g = gate_up[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

/* one head row: weight * rms_norm(x), then rotated: y * cos + roll(y, d / 2) * sin (sin's first half negated) */
static void norm_rotate(const float *x, const float *weight, const float *cos_row, const float *sin_row,
                        float *out, int d, float eps) {
    float y[d];
    const float inv = 1.0f / sqrtf(mean_square(x, d) + eps);
    const int half = d / 2;
#pragma omp simd
    for (int j = 0; j < d; j++) y[j] = weight[j] * (x[j] * inv);
#pragma omp simd
    for (int j = 0; j < half; j++) out[j] = y[j] * cos_row[j] + y[j + half] * sin_row[j];
#pragma omp simd
    for (int j = half; j < d; j++) out[j] = y[j] * cos_row[j] + y[j - half] * sin_row[j];
}

static inline void load_row(const void *cache, int bf16, size_t offset, float *row, int d) {
    if (bf16) {
        const uint16_t *src = (const uint16_t *)cache + offset;
#pragma omp simd
        for (int j = 0; j < d; j++) row[j] = bf16_to_float(src[j]);
    } else {
        memcpy(row, (const float *)cache + offset, (size_t)d * sizeof(float));
    }
}

static inline void store_row(void *cache, int bf16, size_t offset, const float *row, int d) {
    if (bf16) {
        uint16_t *dst = (uint16_t *)cache + offset;
        for (int j = 0; j < d; j++) dst[j] = float_to_bf16(row[j]);
    } else {
        memcpy((float *)cache + offset, row, (size_t)d * sizeof(float));
    }
}

/* One layer's attention for one new token at position `past`.
 *
 * qkv: the q|k|v product's row (heads * d query values, kv_heads * d keys, kv_heads * d values);
 * qk_norm: (heads + kv_heads, d) norm weights; cos_row, sin_row: the rotary table's row for `past`;
 * cache: this layer's (2, kv_heads, capacity, d) keys and values, fp32 or bf16 (`bf16` 1);
 * out: heads * d attended values, head by head. Query head h reads key/value head h / (heads / kv_heads).
 * Returns 0, or -1 when a work buffer could not be allocated (nothing is written to out then). */
int attend_step(const float *qkv, const float *qk_norm, const float *cos_row, const float *sin_row,
                void *cache, int bf16, long capacity, int past, int heads, int kv_heads, int d,
                float eps, float scale, float *out, int threads) {
    const int group = heads / kv_heads;
    const int length = past + 1;
    float *queries = malloc((size_t)heads * d * sizeof(float));
    if (!queries) return -1;
    int failed = 0;

    /* q heads normed and rotated; k heads normed, rotated and written; v written as it is */
    for (int h = 0; h < heads; h++)
        norm_rotate(qkv + (size_t)h * d, qk_norm + (size_t)h * d, cos_row, sin_row, queries + (size_t)h * d, d, eps);
    for (int g = 0; g < kv_heads; g++) {
        float key[d];
        norm_rotate(qkv + (size_t)(heads + g) * d, qk_norm + (size_t)(heads + g) * d, cos_row, sin_row, key, d, eps);
        store_row(cache, bf16, ((size_t)g * capacity + past) * d, key, d);
        store_row(cache, bf16, ((size_t)(kv_heads + g) * capacity + past) * d,
                  qkv + (size_t)(heads + kv_heads + g) * d, d);
    }

#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : failed)
    for (int g = 0; g < kv_heads; g++) {
        float *scores = malloc((size_t)group * length * sizeof(float));
        float *acc = calloc((size_t)group * d, sizeof(float));
        if (!scores || !acc) {
            free(scores);
            free(acc);
            failed = 1;
            continue;
        }
        float row[d];
        const float *q = queries + (size_t)g * group * d;
        /* scores: every key of this head read once, against each query head of its group */
        for (int t = 0; t < length; t++) {
            load_row(cache, bf16, ((size_t)g * capacity + t) * d, row, d);
            for (int r = 0; r < group; r++) {
                const float *qr = q + (size_t)r * d;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int j = 0; j < d; j++) dot += qr[j] * row[j];
                scores[(size_t)r * length + t] = dot * scale;
            }
        }
        /* softmax per query head, in fp32 */
        for (int r = 0; r < group; r++) {
            float *s = scores + (size_t)r * length;
            float top = -INFINITY;
            for (int t = 0; t < length; t++) top = s[t] > top ? s[t] : top;
            float total = 0.0f;
#pragma omp simd reduction(+ : total)
            for (int t = 0; t < length; t++) {
                s[t] = expf(s[t] - top);
                total += s[t];
            }
            const float inv = 1.0f / total;
#pragma omp simd
            for (int t = 0; t < length; t++) s[t] *= inv;
        }
        /* the weighted sum of values, every value row read once */
        for (int t = 0; t < length; t++) {
            load_row(cache, bf16, ((size_t)(kv_heads + g) * capacity + t) * d, row, d);
            for (int r = 0; r < group; r++) {
                const float w = scores[(size_t)r * length + t];
                float *a = acc + (size_t)r * d;
#pragma omp simd
                for (int j = 0; j < d; j++) a[j] += w * row[j];
            }
        }
        memcpy(out + (size_t)g * group * d, acc, (size_t)group * d * sizeof(float));
        free(scores);
        free(acc);
    }
    free(queries);
    return failed ? -1 : 0;
}

/* -- int8 weights, a scale per row ------------------------------------------------------------
 *
 * y[m][n] = scale[n] * xs[m] * sum_k xq[m][k] * w[n][k], with xq the row m of x rounded to int8
 * over its own largest magnitude (xs = max|x| / 127) and w the weight's int8 values. The integer
 * sums are exact, so every path below (AVX2 or plain C, any thread count) gives the same floats.
 *
 * The weights lie in blocks of 4 rows, each block in chunks of 32 columns, the 4 rows' 32 values
 * of a chunk side by side: w[n][k] is at ((n / 4) * (K / 32) + k / 32) * 128 + (n % 4) * 32 + k % 32.
 * A block is then read as one stream (the prefetcher's best case), and 32 columns are one AVX2 load.
 * K is a multiple of 32; rows past N in the last block are zeros. */
#define ROWS8_BLOCK 4
#define ROWS8_CHUNK 32

static void quantize_row(const float *x, int8_t *q, float *xs, long k) {
    float top = 0.0f;
    for (long i = 0; i < k; i++) {
        const float v = fabsf(x[i]);
        top = (v > top || v != v) ? v : top; /* a NaN is kept, so the row's outputs are NaN */
    }
    const float inv = top > 0.0f ? 127.0f / top : 0.0f;
    *xs = top / 127.0f;
    for (long i = 0; i < k; i++) q[i] = (int8_t)lrintf(x[i] * inv);
}

#if defined(__AVX2__)
static inline int32_t sum_lanes(__m256i v) {
    __m128i a = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_hadd_epi32(a, a);
    a = _mm_hadd_epi32(a, a);
    return _mm_cvtsi128_si32(a);
}

/* acc += the 32 products x[j] * w[j], summed in fours (|x| <= 127 and |w| <= 127, so no int16 overflows) */
static inline __m256i dot32(__m256i x_abs, __m256i x, __m256i w, __m256i acc) {
    const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(w, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

/* one block's 4 rows against rows m0 .. m0 + rows - 1 (1 or 2) of xq: the sums, row of x by row of w */
static inline void block_sums(const int8_t *block, const int8_t *xq, long K, int rows, int32_t sums[2][4]) {
    __m256i acc[2][4];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++) acc[r][i] = _mm256_setzero_si256();
    for (long c = 0; c < K / ROWS8_CHUNK; c++) {
        const int8_t *w = block + c * ROWS8_BLOCK * ROWS8_CHUNK;
        /* the next chunks of this block, fetched while these are summed */
        _mm_prefetch((const char *)(w + 2048), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + 2048 + 64), _MM_HINT_T0);
        for (int r = 0; r < rows; r++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + r * K + c * ROWS8_CHUNK));
            const __m256i x_abs = _mm256_sign_epi8(x, x);
            for (int i = 0; i < 4; i++)
                acc[r][i] = dot32(x_abs, x, _mm256_loadu_si256((const __m256i *)(w + i * ROWS8_CHUNK)), acc[r][i]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < 4; i++) sums[r][i] = sum_lanes(acc[r][i]);
}
#else
static inline void block_sums(const int8_t *block, const int8_t *xq, long K, int rows, int32_t sums[2][4]) {
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < 4; i++) {
            int32_t total = 0;
            for (long c = 0; c < K / ROWS8_CHUNK; c++) {
                const int8_t *w = block + c * ROWS8_BLOCK * ROWS8_CHUNK + i * ROWS8_CHUNK;
                const int8_t *x = xq + r * K + c * ROWS8_CHUNK;
                for (int j = 0; j < ROWS8_CHUNK; j++) total += (int32_t)x[j] * (int32_t)w[j];
            }
            sums[r][i] = total;
        }
}
#endif

/* y (M, N) = x (M, K) @ W.T for W prepared as above (`packed`, `scale` one float per row, N rows).
 * Returns 0, or -1 when its buffer for x in int8 could not be allocated (y is not written then). */
int int8_rows(const float *x, const int8_t *packed, const float *scale, float *y, long M, long N, long K,
              int threads) {
    int8_t *xq = malloc((size_t)M * K + 64);
    float *xs = malloc((size_t)M * sizeof(float));
    if (!xq || !xs) {
        free(xq);
        free(xs);
        return -1;
    }
    for (long m = 0; m < M; m++) quantize_row(x + m * K, xq + m * K, xs + m, K);
    const long blocks = (N + ROWS8_BLOCK - 1) / ROWS8_BLOCK;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (long b = 0; b < blocks; b++) {
        const int8_t *block = packed + b * ROWS8_BLOCK * K;
        const long n0 = b * ROWS8_BLOCK;
        const int valid = N - n0 < ROWS8_BLOCK ? (int)(N - n0) : ROWS8_BLOCK;
        /* two rows of x at a time share each load of the block's weights */
        for (long m = 0; m < M; m += 2) {
            const int rows = M - m < 2 ? 1 : 2;
            int32_t sums[2][4];
            block_sums(block, xq + m * K, K, rows, sums);
            for (int r = 0; r < rows; r++)
                for (int i = 0; i < valid; i++) y[(m + r) * N + n0 + i] = (float)sums[r][i] * xs[m + r] * scale[n0 + i];
        }
    }
    free(xq);
    free(xs);
    return 0;
}
