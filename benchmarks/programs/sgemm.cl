// Hand-written OpenCL C peer of the sgemm benchmark (benchmarks/programs/sgemm.py):
// C_out = alpha * A @ B + beta * C_in, row-major, any M, N, K.
//
// Local-memory tiling with more work per item: a work group of TS x (TS / WPT)
// items computes a TS x TS tile of C; each item keeps WPT accumulators for WPT
// rows of one column.  Tiles of A and B are staged through local memory, loads
// coalesced along the column index; out-of-range elements load as zero.

#define TS 32          // tile edge
#define WPT 4          // outputs per work item
#define RTS (TS / WPT) // work items per tile column

__kernel __attribute__((reqd_work_group_size(TS, RTS, 1)))
void sgemm_tiled(const int M, const int N, const int K, const float alpha, const float beta,
                 __global const float* A, __global const float* B,
                 __global const float* C_in, __global float* C_out) {
    const int local_col = get_local_id(0), local_row = get_local_id(1);
    const int col = get_group_id(0) * TS + local_col;
    const int tile_row = get_group_id(1) * TS;
    __local float a_tile[TS][TS];
    __local float b_tile[TS][TS];
    float acc[WPT];
    for (int w = 0; w < WPT; w++) acc[w] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TS) {
        for (int w = 0; w < WPT; w++) {
            const int r = local_row + w * RTS;
            const int a_row = tile_row + r, a_col = k0 + local_col;
            a_tile[r][local_col] = (a_row < M && a_col < K) ? A[a_row * K + a_col] : 0.0f;
            const int b_row = k0 + r;
            b_tile[r][local_col] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {
            const float b = b_tile[k][local_col];
            for (int w = 0; w < WPT; w++) acc[w] += a_tile[local_row + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; w++) {
        const int row = tile_row + local_row + w * RTS;
        if (row < M && col < N) C_out[row * N + col] = C_in[row * N + col] * beta + alpha * acc[w];
    }
}
