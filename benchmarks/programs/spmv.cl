// Hand-written OpenCL C peer of the spmv benchmark (benchmarks/programs/spmv.py):
// "CSR-vector" (Bell & Garland, SC 2009): LANES work items share a row, read
// its non-zeros with unit stride (coalesced) and combine their partial sums
// with a tree in local memory.

#define LANES 8
#define GROUP 128

__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void spmv_csr_vector(__global const int* row_ptr, __global const int* cols,
                     __global const float* vals, __global const float* x,
                     __global float* y, const int N) {
    __local float partial[GROUP];
    const int lid = get_local_id(0), lane = lid % LANES;
    const int row = get_global_id(0) / LANES;
    float sum = 0.0f;
    if (row < N)
        for (int p = row_ptr[row] + lane; p < row_ptr[row + 1]; p += LANES) sum += vals[p] * x[cols[p]];
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = LANES / 2; stride > 0; stride /= 2) {
        if (lane < stride) partial[lid] += partial[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && row < N) y[row] = partial[lid];
}
