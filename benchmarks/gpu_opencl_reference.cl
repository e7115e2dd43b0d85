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
