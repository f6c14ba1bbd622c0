/* MinHash minimums in vector lanes: out[j] = min over the shingles x of a[j] * fmix64(x) + b[j]
 * (mod 2^64), for each of the k permutations j (_sketch.min_hashes, minhash.min_hashes).
 *
 * Why: the scalar loop does one 64-bit multiply-add and compare per shingle and permutation
 * (84 per shingle) and reloads every minimum from memory each time. Here the minimums stay in
 * registers, 8 permutations to an AVX-512 register (vpmullq, vpminuq) or 4 to an AVX2 one (the
 * 64-bit product from three 32-bit ones, the unsigned compare on sign-flipped values). The CPU is
 * asked once which it has; every kernel gives the same integers, the scalar one's.
 */
#ifndef NEARDUP_MINHASH_LANES_H
#define NEARDUP_MINHASH_LANES_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t nd_fmix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    return x ^ (x >> 33);
}

enum { ND_KERNEL_SCALAR = 0, ND_KERNEL_AVX2 = 1, ND_KERNEL_AVX512 = 2 };

static void nd_min_hashes_scalar(const uint64_t *shingles, size_t n, const uint64_t *a,
                                 const uint64_t *b, size_t k, uint64_t *out) {
    size_t i, j;
    for (j = 0; j < k; j++) out[j] = UINT64_MAX;
    for (i = 0; i < n; i++) {
        uint64_t mixed = nd_fmix64(shingles[i]);
        for (j = 0; j < k; j++) {
            uint64_t value = a[j] * mixed + b[j];
            if (value < out[j]) out[j] = value;
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ND_HAVE_LANES 1
#include <immintrin.h>

/* 11 registers of 8: the 84 permutations of the default in one pass over the shingles. */
#define ND_AVX512_REGS 11

__attribute__((target("avx512f,avx512dq")))
static void nd_min_hashes_avx512(const uint64_t *shingles, size_t n, const uint64_t *a,
                                 const uint64_t *b, size_t k, uint64_t *out) {
    size_t base, i;
    int r;
    for (base = 0; base < k; base += 8 * ND_AVX512_REGS) {
        __m512i va[ND_AVX512_REGS], vb[ND_AVX512_REGS], vmin[ND_AVX512_REGS];
        __mmask8 mask[ND_AVX512_REGS];
        for (r = 0; r < ND_AVX512_REGS; r++) {
            size_t j = base + 8 * (size_t)r, left = j < k ? k - j : 0;
            mask[r] = left >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << left) - 1u);
            va[r] = _mm512_maskz_loadu_epi64(mask[r], a + j);
            vb[r] = _mm512_maskz_loadu_epi64(mask[r], b + j);
            vmin[r] = _mm512_set1_epi64(-1);
        }
        for (i = 0; i < n; i++) {
            __m512i mixed = _mm512_set1_epi64((long long)nd_fmix64(shingles[i]));
            for (r = 0; r < ND_AVX512_REGS; r++) {
                __m512i value = _mm512_add_epi64(_mm512_mullo_epi64(va[r], mixed), vb[r]);
                vmin[r] = _mm512_min_epu64(vmin[r], value);
            }
        }
        for (r = 0; r < ND_AVX512_REGS; r++) {
            _mm512_mask_storeu_epi64(out + base + 8 * (size_t)r, mask[r], vmin[r]);
        }
    }
}

/* 6 registers of 4 a pass (24 permutations): the minimums, multipliers and offsets of a pass
 * stay within the 16 AVX2 registers. */
#define ND_AVX2_REGS 6

__attribute__((target("avx2")))
static void nd_min_hashes_avx2(const uint64_t *shingles, size_t n, const uint64_t *a,
                               const uint64_t *b, size_t k, uint64_t *out) {
    const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    size_t base, i, j;
    int r;
    for (base = 0; base + 4 <= k; base += 4 * ND_AVX2_REGS) {
        __m256i va[ND_AVX2_REGS], va_high[ND_AVX2_REGS], vb_flipped[ND_AVX2_REGS];
        __m256i vmin_flipped[ND_AVX2_REGS];
        int regs = 0;
        for (r = 0; r < ND_AVX2_REGS && base + 4 * (size_t)r + 4 <= k; r++, regs++) {
            va[r] = _mm256_loadu_si256((const __m256i *)(a + base + 4 * (size_t)r));
            va_high[r] = _mm256_srli_epi64(va[r], 32);
            /* v + 2^63 = v ^ 2^63 (mod 2^64): offsets carry the flip, so the sums come flipped */
            vb_flipped[r] = _mm256_xor_si256(
                _mm256_loadu_si256((const __m256i *)(b + base + 4 * (size_t)r)), sign);
            vmin_flipped[r] = _mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL); /* UINT64_MAX, flipped */
        }
        for (i = 0; i < n; i++) {
            uint64_t x = nd_fmix64(shingles[i]);
            __m256i mixed = _mm256_set1_epi64x((long long)x);
            __m256i mixed_high = _mm256_set1_epi64x((long long)(x >> 32));
            for (r = 0; r < regs; r++) {
                /* low 64 bits of a * x: lo(a)lo(x) + (hi(a)lo(x) + lo(a)hi(x)) << 32 */
                __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(va_high[r], mixed),
                                                 _mm256_mul_epu32(va[r], mixed_high));
                __m256i product = _mm256_add_epi64(_mm256_mul_epu32(va[r], mixed),
                                                   _mm256_slli_epi64(cross, 32));
                __m256i value = _mm256_add_epi64(product, vb_flipped[r]);
                __m256i smaller = _mm256_cmpgt_epi64(vmin_flipped[r], value);
                vmin_flipped[r] = _mm256_blendv_epi8(vmin_flipped[r], value, smaller);
            }
        }
        for (r = 0; r < regs; r++) {
            _mm256_storeu_si256((__m256i *)(out + base + 4 * (size_t)r),
                                _mm256_xor_si256(vmin_flipped[r], sign));
        }
    }
    j = k - k % 4; /* the last permutations, fewer than a register */
    if (j < k) nd_min_hashes_scalar(shingles, n, a + j, b + j, k - j, out + j);
}

static int nd_best_kernel(void) {
    static int best = -1;
    if (best < 0) {
        __builtin_cpu_init();
        best = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
                   ? ND_KERNEL_AVX512
                   : __builtin_cpu_supports("avx2") ? ND_KERNEL_AVX2 : ND_KERNEL_SCALAR;
    }
    return best;
}
#else
#define ND_HAVE_LANES 0
static int nd_best_kernel(void) { return ND_KERNEL_SCALAR; }
#endif

/* The minimums with `kernel` (an ND_KERNEL_*, at most nd_best_kernel()); out holds k values. */
static void nd_min_hashes(int kernel, const uint64_t *shingles, size_t n, const uint64_t *a,
                          const uint64_t *b, size_t k, uint64_t *out) {
#if ND_HAVE_LANES
    if (kernel == ND_KERNEL_AVX512) {
        nd_min_hashes_avx512(shingles, n, a, b, k, out);
        return;
    }
    if (kernel == ND_KERNEL_AVX2) {
        nd_min_hashes_avx2(shingles, n, a, b, k, out);
        return;
    }
#endif
    (void)kernel;
    nd_min_hashes_scalar(shingles, n, a, b, k, out);
}

#endif
