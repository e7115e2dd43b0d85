// Hand-written OpenCL C peer of the stencil benchmark (benchmarks/programs/stencil.py):
// one Jacobi sweep of Parboil's 7-point stencil; the host ping-pongs two grids.
//
// Parboil's GPU scheme: a 2-D work group covers a TX x TY block of the xy-plane
// and marches along z.  Each item keeps its column's z-1, z, z+1 values in
// registers; the current plane (with a one-point halo) is staged in local memory
// so the four in-plane neighbours come from there.  Boundary points are copied.

#define TX 32
#define TY 8

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void stencil_sweep(const float c0, const float c1, __global const float* src,
                   __global float* dst, const int nx, const int ny, const int nz) {
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int x = get_group_id(0) * TX + lx, y = get_group_id(1) * TY + ly;
    const bool inside = x < nx && y < ny;
    const bool interior = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
    const int plane = nx * ny, at = y * nx + x;
    __local float tile[TY + 2][TX + 2];

    float below = 0.0f;
    float current = inside ? src[at] : 0.0f;
    float above = inside ? src[plane + at] : 0.0f;
    if (inside) dst[at] = current;                       // z = 0 boundary plane
    for (int z = 1; z < nz - 1; z++) {
        below = current;
        current = above;
        above = inside ? src[(z + 1) * plane + at] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);                    // the previous plane is no longer read
        const int base = z * plane;
        tile[ly + 1][lx + 1] = current;
        if (lx == 0) tile[ly + 1][0] = (x > 0 && y < ny) ? src[base + at - 1] : 0.0f;
        if (lx == TX - 1) tile[ly + 1][TX + 1] = (x + 1 < nx && y < ny) ? src[base + at + 1] : 0.0f;
        if (ly == 0) tile[0][lx + 1] = (y > 0 && x < nx) ? src[base + at - nx] : 0.0f;
        if (ly == TY - 1) tile[TY + 1][lx + 1] = (y + 1 < ny && x < nx) ? src[base + at + nx] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (inside) {
            float value = current;
            if (interior)
                value = (above + below + tile[ly + 2][lx + 1] + tile[ly][lx + 1]
                         + tile[ly + 1][lx + 2] + tile[ly + 1][lx]) * c1 - current * c0;
            dst[base + at] = value;
        }
    }
    if (inside) dst[(nz - 1) * plane + at] = above;      // z = nz - 1 boundary plane
}
