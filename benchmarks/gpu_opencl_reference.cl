// Hand-written OpenCL C: the peers of hpvm's generated kernels in
// benchmarks/gpu_opencl_bench.py (same algorithms, written as a person
// would: 32-bit indices, no wrap-around care).

__kernel void sgemm_naive(__global const float* a, __global const float* b, __global float* c,
                          int M, int N, int K) {
    int j = get_global_id(0), i = get_global_id(1);
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += a[i * K + k] * b[k * N + j];
    c[i * N + j] = acc;
}

#define TILE 16
__kernel void sgemm_tiled(__global const float* a, __global const float* b, __global float* c,
                          int M, int N, int K) {
    __local float ta[TILE][TILE], tb[TILE][TILE];
    int lx = get_local_id(0), ly = get_local_id(1);
    int j = get_group_id(0) * TILE + lx, i = get_group_id(1) * TILE + ly;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        ta[ly][lx] = (i < M && k0 + lx < K) ? a[i * K + k0 + lx] : 0.0f;
        tb[ly][lx] = (k0 + ly < K && j < N) ? b[(k0 + ly) * N + j] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int k = 0; k < TILE; k++) acc += ta[ly][k] * tb[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < M && j < N) c[i * N + j] = acc;
}

__kernel void blur_rows(__global const float* src, __global float* dst, int H, int W) {
    int x = get_global_id(0), y = get_global_id(1);
    if (y >= H || x >= W) return;
    float s = src[y * W + max(x - 1, 0)] + src[y * W + x] + src[y * W + min(x + 1, W - 1)];
    dst[y * W + x] = s / 3.0f;
}

__kernel void blur_columns(__global const float* src, __global float* dst, int H, int W) {
    int x = get_global_id(0), y = get_global_id(1);
    if (y >= H || x >= W) return;
    float s = src[max(y - 1, 0) * W + x] + src[y * W + x] + src[min(y + 1, H - 1) * W + x];
    dst[y * W + x] = s / 3.0f;
}

// blur_rows computed per work group into local memory, blur_columns read
// from there: one kernel, the intermediate never in global memory.
inline float blur_row_at(__global const float* src, int y, int x, int W) {
    return (src[y * W + max(x - 1, 0)] + src[y * W + x] + src[y * W + min(x + 1, W - 1)]) / 3.0f;
}

// 16 x 16 work items, one output each: a tile of 18 rows x 16 columns.
__kernel void blur_tile16(__global const float* src, __global float* dst, int H, int W) {
    __local float t[18][16];
    int lx = get_local_id(0), ly = get_local_id(1);
    int x = get_global_id(0), y = get_global_id(1);
    int top = y - ly - 1, xc = min(x, W - 1);
    t[ly][lx] = blur_row_at(src, clamp(top + ly, 0, H - 1), xc, W);
    if (ly < 2) t[ly + 16][lx] = blur_row_at(src, clamp(top + ly + 16, 0, H - 1), xc, W);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (y >= H || x >= W) return;
    dst[y * W + x] = (t[max(y - 1, 0) - top][lx] + t[ly + 1][lx] + t[min(y + 1, H - 1) - top][lx]) / 3.0f;
}

// 32 x 8 work items, four rows each (32 x 32 outputs): a tile of 34 x 32.
__kernel void blur_tile32x4(__global const float* src, __global float* dst, int H, int W) {
    __local float t[34][32];
    int lx = get_local_id(0), ly = get_local_id(1);
    int x = get_global_id(0), first = get_group_id(1) * 32;
    int top = first - 1, xc = min(x, W - 1);
    for (int r = ly; r < 34; r += 8) t[r][lx] = blur_row_at(src, clamp(top + r, 0, H - 1), xc, W);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (x >= W) return;
    for (int k = 0; k < 4; k++) {
        int y = first + ly + 8 * k;
        if (y < H)
            dst[y * W + x] = (t[max(y - 1, 0) - top][lx] + t[y - top][lx] + t[min(y + 1, H - 1) - top][lx]) / 3.0f;
    }
}

#define AT(img, yy, xx) img[clamp(yy, 0, H - 1) * W + clamp(xx, 0, W - 1)]

__kernel void edge_gaussian(__global const float* img, __global float* smooth, int H, int W) {
    int x = get_global_id(0), y = get_global_id(1);
    if (y >= H || x >= W) return;
    float t = 4.0f * AT(img, y, x);
    t += 2.0f * (AT(img, y - 1, x) + AT(img, y + 1, x) + AT(img, y, x - 1) + AT(img, y, x + 1));
    t += AT(img, y - 1, x - 1) + AT(img, y - 1, x + 1) + AT(img, y + 1, x - 1) + AT(img, y + 1, x + 1);
    smooth[y * W + x] = t / 16.0f;
}

__kernel void edge_sobel(__global const float* s, __global float* gx, __global float* gy,
                         int H, int W) {
    int x = get_global_id(0), y = get_global_id(1);
    if (y >= H || x >= W) return;
    gx[y * W + x] = AT(s, y - 1, x + 1) + 2.0f * AT(s, y, x + 1) + AT(s, y + 1, x + 1)
                  - AT(s, y - 1, x - 1) - 2.0f * AT(s, y, x - 1) - AT(s, y + 1, x - 1);
    gy[y * W + x] = AT(s, y + 1, x - 1) + 2.0f * AT(s, y + 1, x) + AT(s, y + 1, x + 1)
                  - AT(s, y - 1, x - 1) - 2.0f * AT(s, y - 1, x) - AT(s, y - 1, x + 1);
}

__kernel void edge_magnitude(__global const float* gx, __global const float* gy,
                             __global float* mag, int n) {
    int i = get_global_id(0);
    if (i < n) mag[i] = sqrt(gx[i] * gx[i] + gy[i] * gy[i]);
}

// One work group of 256 per row: a tree reduction in local memory.
__kernel void edge_row_max(__global const float* mag, __global float* row_max, int W) {
    __local float best[256];
    int y = get_group_id(0), lid = get_local_id(0);
    float m = -INFINITY;
    for (int x = lid; x < W; x += 256) m = fmax(m, mag[y * W + x]);
    best[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = 128; step > 0; step >>= 1) {
        if (lid < step) best[lid] = fmax(best[lid], best[lid + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) row_max[y] = best[0];
}

__kernel void edge_max(__global const float* row_max, __global float* peak, int H) {
    __local float best[256];
    int lid = get_local_id(0);
    float m = -INFINITY;
    for (int y = lid; y < H; y += 256) m = fmax(m, row_max[y]);
    best[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = 128; step > 0; step >>= 1) {
        if (lid < step) best[lid] = fmax(best[lid], best[lid + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) peak[0] = best[0];
}

__kernel void edge_threshold(__global const float* mag, __global const float* peak,
                             __global float* edges, float threshold, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    float scale = peak[0] > 0.0f ? peak[0] : 1.0f;
    edges[i] = mag[i] / scale > threshold ? 1.0f : 0.0f;
}
