#include "preprocess/write_rows.h"

#include <immintrin.h>

namespace torchinfer {
namespace {

void write_scalar(const float* c0, const float* c1, const float* c2, const float alpha[3],
                  const float beta[3], int x, int n, float* d) {
  const float a0 = alpha[0], a1 = alpha[1], a2 = alpha[2], b0 = beta[0], b1 = beta[1], b2 = beta[2];
  for (; x < n; ++x)
    d[3 * x] = c0[x] * a0 + b0, d[3 * x + 1] = c1[x] * a1 + b1, d[3 * x + 2] = c2[x] * a2 + b2;
}

// Without "fma" in the target: GCC contracts the intrinsics' multiply and
// add into an FMA when it may, which would round once instead of twice and
// differ from the scalar code in the last bit.
__attribute__((target("avx2"))) void write_avx2(const float* c0, const float* c1, const float* c2,
                                                const float alpha[3], const float beta[3], int n,
                                                float* d) {
  const __m256 a0 = _mm256_set1_ps(alpha[0]), a1 = _mm256_set1_ps(alpha[1]),
               a2 = _mm256_set1_ps(alpha[2]), b0 = _mm256_set1_ps(beta[0]),
               b1 = _mm256_set1_ps(beta[1]), b2 = _mm256_set1_ps(beta[2]);
  // 8 pixels = 24 floats = three vectors; vector v takes pixels p[v][i] and
  // component (i + v * 8) % 3 at lane i: one permute per component and two
  // blends per vector.
  const __m256i p0 = _mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2);
  const __m256i p1 = _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5);
  const __m256i p2 = _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7);
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    const __m256 r = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(c0 + x), a0), b0);
    const __m256 g = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(c1 + x), a1), b1);
    const __m256 b = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(c2 + x), a2), b2);
    float* o = d + 3 * x;
    // Lanes of c0 / c1 / c2 (blend mask bit i set: take the second operand).
    // v0: 0 1 2 0 1 2 0 1   v1: 2 0 1 2 0 1 2 0   v2: 1 2 0 1 2 0 1 2
    _mm256_storeu_ps(o, _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(r, p0),
                                                        _mm256_permutevar8x32_ps(g, p0), 0x92),
                                        _mm256_permutevar8x32_ps(b, p0), 0x24));
    _mm256_storeu_ps(o + 8, _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(r, p1),
                                                            _mm256_permutevar8x32_ps(g, p1), 0x24),
                                            _mm256_permutevar8x32_ps(b, p1), 0x49));
    _mm256_storeu_ps(o + 16, _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(r, p2),
                                                             _mm256_permutevar8x32_ps(g, p2), 0x49),
                                             _mm256_permutevar8x32_ps(b, p2), 0x92));
  }
  write_scalar(c0, c1, c2, alpha, beta, x, n, d);
}

void convert_scalar(const std::uint8_t* src, const float alpha[3], const float beta[3], int i,
                    int n, float* d) {
  for (; i < 3 * n; ++i) d[i] = static_cast<float>(src[i]) * alpha[i % 3] + beta[i % 3];
}

// 8 pixels = 24 values per step; the coefficients repeat every 3 values,
// so three patterned vectors cover them. No FMA, as above.
__attribute__((target("avx2"))) void convert_avx2(const std::uint8_t* src, const float alpha[3],
                                                  const float beta[3], int n, float* d) {
  __m256 a[3], b[3];
  for (int v = 0; v < 3; ++v) {
    alignas(32) float pa[8], pb[8];
    for (int i = 0; i < 8; ++i) pa[i] = alpha[(8 * v + i) % 3], pb[i] = beta[(8 * v + i) % 3];
    a[v] = _mm256_load_ps(pa), b[v] = _mm256_load_ps(pb);
  }
  int i = 0;
  for (; i + 24 <= 3 * n; i += 24)
    for (int v = 0; v < 3; ++v) {
      const __m256 x = _mm256_cvtepi32_ps(
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i + 8 * v))));
      _mm256_storeu_ps(d + i + 8 * v, _mm256_add_ps(_mm256_mul_ps(x, a[v]), b[v]));
    }
  convert_scalar(src, alpha, beta, i, n, d);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");

}  // namespace

void write_interleaved(const float* c0, const float* c1, const float* c2, const float alpha[3],
                       const float beta[3], int n, float* d) {
  if (kHaveAvx2)
    write_avx2(c0, c1, c2, alpha, beta, n, d);
  else
    write_scalar(c0, c1, c2, alpha, beta, 0, n, d);
}

void convert_packed3(const std::uint8_t* src, const float alpha[3], const float beta[3], int n,
                     float* d) {
  if (kHaveAvx2)
    convert_avx2(src, alpha, beta, n, d);
  else
    convert_scalar(src, alpha, beta, 0, n, d);
}

bool convert_packed3_with(bool avx2, const std::uint8_t* src, const float alpha[3],
                          const float beta[3], int n, float* d) {
  if (!avx2) return convert_scalar(src, alpha, beta, 0, n, d), true;
  if (!kHaveAvx2) return false;
  convert_avx2(src, alpha, beta, n, d);
  return true;
}

bool write_interleaved_with(bool avx2, const float* c0, const float* c1, const float* c2,
                            const float alpha[3], const float beta[3], int n, float* d) {
  if (!avx2) return write_scalar(c0, c1, c2, alpha, beta, 0, n, d), true;
  if (!kHaveAvx2) return false;
  write_avx2(c0, c1, c2, alpha, beta, n, d);
  return true;
}

}  // namespace torchinfer
