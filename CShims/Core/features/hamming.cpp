// Exact brute-force k-nearest neighbours under Hamming distance for binary descriptors (AKAZE, ORB, BRISK).
// cv::BFMatcher spends most of its time outside the popcount on these short rows; a packed layout and a
// SIMD popcount chosen at run time are 5-10x faster. Results, distances and tie order equal cv::BFMatcher's
// (the lower train index wins a tie), which the tests check against it.
#include "../shim_internal.hpp"

#include <climits>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

// Rows padded with zero bytes to a whole number of 32-byte blocks: padding never adds to a distance.
struct Packed {
    std::vector<uint64_t> words;
    int rows = 0;
    int stride = 0;  // 64-bit words per row, a multiple of 4
    const uint64_t *row(int r) const { return words.data() + size_t(r) * size_t(stride); }
};

Packed pack(const cv::Mat &descriptors) {
    Packed p;
    p.rows = descriptors.rows;
    p.stride = ((descriptors.cols + 31) / 32) * 4;
    p.words.assign(size_t(p.rows) * size_t(p.stride), 0);
    for (int r = 0; r < p.rows; ++r) std::memcpy(p.words.data() + size_t(r) * size_t(p.stride), descriptors.ptr(r), size_t(descriptors.cols));
    return p;
}

// The two nearest so far; insertion mirrors cv::batchDistance, so equal distances keep the earlier index.
struct Best2 {
    int d1 = INT_MAX, d2 = INT_MAX, i1 = -1, i2 = -1;
    void offer(int d, int j) {
        if (d < d2) {
            if (d < d1) {
                d2 = d1;
                i2 = i1;
                d1 = d;
                i1 = j;
            } else {
                d2 = d;
                i2 = j;
            }
        }
    }
};

using Kernel = void (*)(const Packed &, const Packed &, int, int, Best2 *);

void knn_portable(const Packed &query, const Packed &train, int begin, int end, Best2 *out) {
    for (int q = begin; q < end; ++q) {
        const uint64_t *a = query.row(q);
        Best2 best;
        for (int j = 0; j < train.rows; ++j) {
            const uint64_t *b = train.row(j);
            int d = 0;
            for (int w = 0; w < query.stride; ++w) d += __builtin_popcountll(a[w] ^ b[w]);
            best.offer(d, j);
        }
        out[q] = best;
    }
}

#if defined(__x86_64__)
// Per-byte popcount by nibble lookup (Muła et al.), summed with SAD.
__attribute__((target("avx2"))) inline __m256i popcount_bytes(__m256i v) {
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i low = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
    __m256i high = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    return _mm256_add_epi8(low, high);
}

__attribute__((target("avx2"))) void knn_avx2(const Packed &query, const Packed &train, int begin, int end, Best2 *out) {
    const int blocks = query.stride / 4;
    for (int q = begin; q < end; ++q) {
        const auto *a = reinterpret_cast<const __m256i *>(query.row(q));
        Best2 best;
        for (int j = 0; j < train.rows; ++j) {
            const auto *b = reinterpret_cast<const __m256i *>(train.row(j));
            __m256i sum = _mm256_setzero_si256();
            // A byte lane gains at most 8 per block: 31 blocks stay below 256 before the SAD widens them.
            for (int k = 0; k < blocks;) {
                __m256i bytes = _mm256_setzero_si256();
                for (int stop = std::min(blocks, k + 31); k < stop; ++k) {
                    bytes = _mm256_add_epi8(bytes, popcount_bytes(_mm256_xor_si256(_mm256_loadu_si256(a + k), _mm256_loadu_si256(b + k))));
                }
                sum = _mm256_add_epi64(sum, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
            }
            __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
            best.offer(int(_mm_cvtsi128_si64(half) + _mm_extract_epi64(half, 1)), j);
        }
        out[q] = best;
    }
}

__attribute__((target("avx512f,avx512vpopcntdq"))) void knn_avx512(const Packed &query, const Packed &train, int begin, int end,
                                                                   Best2 *out) {
    const int blocks = query.stride / 8;  // only chosen when the stride is a multiple of 8 words
    for (int q = begin; q < end; ++q) {
        const uint64_t *a = query.row(q);
        Best2 best;
        for (int j = 0; j < train.rows; ++j) {
            const uint64_t *b = train.row(j);
            __m512i sum = _mm512_setzero_si512();
            for (int k = 0; k < blocks; ++k) {
                sum = _mm512_add_epi64(sum, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(a + 8 * k), _mm512_loadu_si512(b + 8 * k))));
            }
            best.offer(int(_mm512_reduce_add_epi64(sum)), j);
        }
        out[q] = best;
    }
}
#endif

// Indexed by rp_hamming_kernel; tests and benchmarks name a kernel per call, results are identical.
const char *const kernel_names[] = {"", "portable", "avx2", "avx512-vpopcntdq"};

bool cpu_has(int kernel) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    switch (kernel) {
        case RP_HAMMING_PORTABLE: return true;
        case RP_HAMMING_AVX2: return __builtin_cpu_supports("avx2");
        case RP_HAMMING_AVX512_VPOPCNTDQ: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
        default: return false;
    }
#else
    return kernel == RP_HAMMING_PORTABLE;
#endif
}

// AVX-512 rows are 64-byte multiples; other strides fall back to AVX2, which every AVX-512 CPU has.
Kernel choose_kernel(int kernel, int stride) {
#if defined(__x86_64__)
    switch (kernel) {
        case RP_HAMMING_PORTABLE: return knn_portable;
        case RP_HAMMING_AVX2: return knn_avx2;
        case RP_HAMMING_AVX512_VPOPCNTDQ: return stride % 8 == 0 ? knn_avx512 : knn_avx2;
        default: break;
    }
#endif
    (void)stride;
    return knn_portable;
}

}  // namespace

namespace rp {

int resolve_hamming_kernel(int kernel) {
    if (kernel == RP_HAMMING_AUTO) {
        for (int k = RP_HAMMING_AVX512_VPOPCNTDQ; k > RP_HAMMING_PORTABLE; --k) {
            if (cpu_has(k)) return k;
        }
        return RP_HAMMING_PORTABLE;
    }
    return cpu_has(kernel) ? kernel : RP_HAMMING_AUTO;
}

std::vector<std::vector<cv::DMatch>> hamming_knn(const cv::Mat &query, const cv::Mat &train, int k, int kernel_choice) {
    CV_Assert(query.type() == CV_8U && train.type() == CV_8U && query.cols == train.cols && (k == 1 || k == 2));
    const int resolved = resolve_hamming_kernel(kernel_choice);
    if (resolved == RP_HAMMING_AUTO) {
        fail(RP_ERR_INVALID_ARGUMENT, RP_CAUSE_UNSUPPORTED_CPU, cv::format("Hamming kernel %d (%s) cannot run on this CPU", kernel_choice,
                                                 hamming_kernel_name(kernel_choice)));
    }
    std::vector<std::vector<cv::DMatch>> knn(size_t(query.rows));
    if (query.empty() || train.empty()) return knn;
    const Packed packed_query = pack(query), packed_train = pack(train);
    std::vector<Best2> best(size_t(query.rows));
    const Kernel kernel = choose_kernel(resolved, packed_query.stride);
    // Stripes of about 64 queries keep OpenCV's scheduler busy on every core it is allowed to use.
    cv::parallel_for_(cv::Range(0, query.rows), [&](const cv::Range &range) { kernel(packed_query, packed_train, range.start, range.end, best.data()); },
                      std::max(1.0, query.rows / 64.0));
    for (int q = 0; q < query.rows; ++q) {
        const Best2 &b = best[size_t(q)];
        std::vector<cv::DMatch> &list = knn[size_t(q)];
        if (b.i1 >= 0) list.emplace_back(q, b.i1, float(b.d1));
        if (k == 2 && b.i2 >= 0) list.emplace_back(q, b.i2, float(b.d2));
    }
    return knn;
}

const char *hamming_kernel_name(int kernel) {
    return kernel >= RP_HAMMING_AUTO && kernel <= RP_HAMMING_AVX512_VPOPCNTDQ ? kernel_names[kernel] : "";
}

}  // namespace rp
