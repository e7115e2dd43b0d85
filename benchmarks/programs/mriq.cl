// Hand-written OpenCL C peer of the mriq benchmark (benchmarks/programs/mriq.py),
// after Parboil's mri-q GPU version: the k-space samples are packed into
// float4 (kx, ky, kz, phi_mag) and read from constant memory in chunks, one
// work item per voxel, accumulating Q over the chunks.  Each chunk has its
// own buffer, filled by pack_k_values from samples first_k .. first_k + count.

#define TWO_PI 6.2831853071795864769252867665590058f

__kernel void pack_k_values(__global const float* kx, __global const float* ky,
                            __global const float* kz, __global const float* phi_r,
                            __global const float* phi_i, __global float4* k_values,
                            const int first_k, const int count) {
    const int j = get_global_id(0), k = first_k + j;
    if (j < count) k_values[j] = (float4)(kx[k], ky[k], kz[k], phi_r[k] * phi_r[k] + phi_i[k] * phi_i[k]);
}

__kernel void compute_q(__constant float4* k_values, const int count, const int first,
                        __global const float* x, __global const float* y, __global const float* z,
                        __global float* Qr, __global float* Qi, const int X) {
    const int i = get_global_id(0);
    if (i >= X) return;
    const float xi = x[i], yi = y[i], zi = z[i];
    float real = first ? 0.0f : Qr[i], imag = first ? 0.0f : Qi[i];
    for (int k = 0; k < count; k++) {
        const float4 s = k_values[k];
        const float angle = TWO_PI * (s.x * xi + s.y * yi + s.z * zi);
        real += s.w * cos(angle);
        imag += s.w * sin(angle);
    }
    Qr[i] = real;
    Qi[i] = imag;
}
