// The warp-level matrix instructions on the GPU, as inline PTX: mma.sync (m16n8k16 on sm_80+,
// as two m16n8k8 on sm_75; m8n8k4 on sm_70+; m16n8k8 tf32 on sm_80+), ldmatrix (sm_75+) and cp.async (sm_80+). A kernel
// only instantiates what its strategy uses, so an sm_61 build contains none of them.
#ifndef BX_DEVICE_MMA_H
#define BX_DEVICE_MMA_H

BX_FN int bx_lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31; }

BX_FN bx_u32 bx_shared_address(const void* p) {
  bx_u32 address;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(p));
  return address;
}

// Fragment layouts: see bx_host_mma.h, which computes the same lane by lane.
template <bool BF16>
BX_FN void bx_mma_16816(float* c, const bx_u32* a, const bx_u32* b) {
#if __CUDA_ARCH__ >= 800
  if constexpr (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  static_assert(!BF16, "bf16 mma needs sm_80");
  // sm_75: k 0..7 live in a[0], a[1], b[0] and k 8..15 in a[2], a[3], b[1], each an m16n8k8.
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}

// f32 -> TF32 (cvt.rna: to nearest, ties away from zero), the low 13 bits zero.
BX_FN bx_u32 bx_tf32_bits(float x) {
  bx_u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

BX_FN void bx_mma_1688_tf32(float* c, const bx_u32* a, const bx_u32* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

BX_FN void bx_mma_884(float* c, const bx_u32* a, const bx_u32* b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, {%10,%11}, "
               "{%0,%1,%2,%3,%4,%5,%6,%7};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]));
}

template <bool TRANS>
BX_FN void bx_ldmatrix_x4(bx_u32* r, const void* row) {
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(bx_shared_address(row))
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(bx_shared_address(row))
                 : "memory");
}

// cp.async with a zero fill: src-size 0 writes BYTES zeros and reads nothing.
template <int BYTES>
BX_FN void bx_cp_async(void* dst, const void* src, bool valid) {
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(bx_shared_address(dst)), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(bx_shared_address(dst)), "l"(src), "n"(BYTES),
                 "r"(valid ? BYTES : 0)
                 : "memory");
}
BX_FN void bx_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int PENDING>
BX_FN void bx_cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory"); }

#endif  // BX_DEVICE_MMA_H
