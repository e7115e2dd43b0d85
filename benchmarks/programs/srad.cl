// Hand-written OpenCL C peer of the srad benchmark (benchmarks/programs/srad.py):
// one iteration of Rodinia's SRAD v2 is three kernels.
//
// roi_statistics: one work group of ROI_ITEMS items sums J and J^2 over the
// region of interest (strided loads, then a tree reduction in local memory)
// and writes q0sqr (Rodinia does this on the host between kernel launches).
// srad_1 / srad_2: Rodinia's srad_cuda_1 / srad_cuda_2, one item per pixel,
// neighbours clamped at the border.  srad_2 reads the image from `src` and
// writes `dst` (the same buffer after the first iteration).

#define ROI_ITEMS 256

__kernel __attribute__((reqd_work_group_size(ROI_ITEMS, 1, 1)))
void roi_statistics(__global const float* J, const int cols, const int r1, const int r2,
                    const int c1, const int c2, __global float* q0sqr) {
    __local float sums[ROI_ITEMS], squares[ROI_ITEMS];
    const int item = get_local_id(0);
    const int width = c2 - c1 + 1, count = (r2 - r1 + 1) * width;
    float sum = 0.0f, square = 0.0f;
    for (int k = item; k < count; k += ROI_ITEMS) {
        const float value = J[(r1 + k / width) * cols + c1 + k % width];
        sum += value;
        square += value * value;
    }
    sums[item] = sum;
    squares[item] = square;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = ROI_ITEMS / 2; stride > 0; stride /= 2) {
        if (item < stride) {
            sums[item] += sums[item + stride];
            squares[item] += squares[item + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (item == 0) {
        const float mean = sums[0] / count;
        const float variance = squares[0] / count - mean * mean;
        q0sqr[0] = variance / (mean * mean);
    }
}

__kernel void srad_1(__global const float* J, const int rows, const int cols,
                     __global const float* q0sqr, __global float* dN, __global float* dS,
                     __global float* dW, __global float* dE, __global float* c) {
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= rows || j >= cols) return;
    const int k = i * cols + j;
    const float centre = J[k];
    const float north = J[max(i - 1, 0) * cols + j] - centre;
    const float south = J[min(i + 1, rows - 1) * cols + j] - centre;
    const float west = J[i * cols + max(j - 1, 0)] - centre;
    const float east = J[i * cols + min(j + 1, cols - 1)] - centre;
    dN[k] = north;
    dS[k] = south;
    dW[k] = west;
    dE[k] = east;
    const float g2 = (north * north + south * south + west * west + east * east) / (centre * centre);
    const float lap = (north + south + west + east) / centre;
    const float num = 0.5f * g2 - (1.0f / 16.0f) * (lap * lap);
    float den = 1.0f + 0.25f * lap;
    const float qsqr = num / (den * den);
    const float q0 = q0sqr[0];
    den = (qsqr - q0) / (q0 * (1.0f + q0));
    c[k] = clamp(1.0f / (1.0f + den), 0.0f, 1.0f);
}

__kernel void srad_2(__global const float* src, __global float* dst, const int rows,
                     const int cols, __global const float* c, __global const float* dN,
                     __global const float* dS, __global const float* dW,
                     __global const float* dE, const float lambda) {
    const int j = get_global_id(0), i = get_global_id(1);
    if (i >= rows || j >= cols) return;
    const int k = i * cols + j;
    const float here = c[k];
    const float south = c[min(i + 1, rows - 1) * cols + j];
    const float east = c[i * cols + min(j + 1, cols - 1)];
    const float div = here * dN[k] + south * dS[k] + here * dW[k] + east * dE[k];
    dst[k] = src[k] + 0.25f * lambda * div;
}
