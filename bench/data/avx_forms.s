# Synthetic forms for bench/avx_diff.py, beyond what the Go binaries hold: one instruction a line (GNU as, Intel
# syntax). The issue #48 list: AES, CLMUL, shuffles, permutes, scalar VEX arithmetic and conversions, compares
# into flags, EVEX broadcast from memory, masked and zeroing forms, BMI; then a spread of AVX2/FMA/AVX-512.
.intel_syntax noprefix
vaesenc xmm1, xmm2, xmm3
vaesenc xmm1, xmm2, xmmword ptr [rbx + 0x10]
vaesenclast xmm1, xmm2, xmm3
vaesdec xmm4, xmm5, xmm6
vaesdeclast xmm4, xmm5, xmmword ptr [rsi]
vaesimc xmm1, xmm2
vaeskeygenassist xmm1, xmm2, 0x1b
vpclmulqdq xmm1, xmm2, xmm3, 0x00
vpclmulqdq xmm1, xmm2, xmmword ptr [rcx + 0x20], 0x11
vpshufb xmm1, xmm2, xmm3
vpshufb ymm1, ymm2, ymmword ptr [rdx]
vinserti128 ymm1, ymm2, xmm3, 1
vextracti128 xmm1, ymm2, 1
vextracti128 xmmword ptr [rbx], ymm2, 0
vinsertf128 ymm1, ymm2, xmmword ptr [rbx], 1
vextractf128 xmm1, ymm2, 1
vpermq ymm1, ymm2, 0x1b
vpermd ymm1, ymm2, ymm3
vpermps ymm1, ymm2, ymmword ptr [rbx]
vpermpd ymm1, ymm2, 0x4e
vperm2i128 ymm1, ymm2, ymm3, 0x31
vpermilps ymm1, ymm2, 0xb1
vpermilpd xmm1, xmm2, xmm3
vmovsd xmm0, qword ptr [rbx + 8]
vmovsd qword ptr [rbx + 8], xmm1
vmovsd xmm0, xmm1, xmm2
vmovss xmm0, dword ptr [rbx]
vaddsd xmm0, xmm1, xmm2
vsubsd xmm0, xmm1, qword ptr [rbx]
vmulsd xmm0, xmm1, xmm2
vdivsd xmm0, xmm1, xmm2
vsqrtsd xmm0, xmm1, xmm2
vsqrtss xmm0, xmm1, xmm2
vminsd xmm0, xmm1, xmm2
vmaxsd xmm0, xmm1, xmm2
vaddss xmm0, xmm1, xmm2
vroundsd xmm0, xmm1, xmm2, 0x0b
vcvtsi2sd xmm1, xmm2, rax
vcvtsi2sd xmm1, xmm2, eax
vcvtsi2ss xmm1, xmm2, rax
vcvttsd2si rax, xmm1
vcvtsd2si eax, xmm1
vcvttss2si rax, xmm1
vcvtsd2ss xmm1, xmm2, xmm3
vcvtss2sd xmm1, xmm2, dword ptr [rbx]
vucomisd xmm1, xmm2
vucomiss xmm1, xmm2
vcomisd xmm1, qword ptr [rbx]
vcomiss xmm1, xmm2
vcmpsd xmm1, xmm2, xmm3, 1
vandpd xmm1, xmm2, xmm3
vxorps ymm1, ymm2, ymm3
vaddpd ymm1, ymm2, ymm3
vmulps ymm1, ymm2, ymmword ptr [rbx]
vdivpd ymm1, ymm2, ymm3
vsqrtpd ymm1, ymm2
vmaxpd ymm1, ymm2, ymm3
vminps xmm1, xmm2, xmm3
vhaddpd ymm1, ymm2, ymm3
vdpps ymm1, ymm2, ymm3, 0xff
vroundpd ymm1, ymm2, 1
vblendvpd ymm1, ymm2, ymm3, ymm4
vpblendvb ymm1, ymm2, ymm3, ymm4
vcmppd ymm1, ymm2, ymm3, 0x11
vcvtdq2ps ymm1, ymm2
vcvtps2pd ymm1, xmm2
vcvttpd2dq xmm1, ymm2
vcvtph2ps ymm1, xmm2
vcvtps2ph xmm1, ymm2, 0
vmovmskpd eax, ymm1
vtestps ymm1, ymm2
vbroadcastss ymm1, dword ptr [rbx]
vbroadcastsd ymm1, xmm2
vbroadcasti128 ymm1, xmmword ptr [rbx]
vpbroadcastq ymm1, xmm2
vpbroadcastd ymm1, dword ptr [rbx]
vfmadd132pd ymm1, ymm2, ymm3
vfmsub213ps ymm1, ymm2, ymmword ptr [rbx]
vfnmadd231ps xmm1, xmm2, xmm3
vfmaddsub231pd ymm1, ymm2, ymm3
vfmadd132sd xmm1, xmm2, qword ptr [rbx]
vfmsub231ss xmm1, xmm2, xmm3
vpaddb ymm1, ymm2, ymm3
vpaddsw ymm1, ymm2, ymm3
vpaddusb ymm1, ymm2, ymm3
vpsubq ymm1, ymm2, ymmword ptr [rbx]
vpmullw ymm1, ymm2, ymm3
vpmulld ymm1, ymm2, ymm3
vpmuludq ymm1, ymm2, ymm3
vpmulhrsw ymm1, ymm2, ymm3
vpmaddubsw ymm1, ymm2, ymm3
vpmaddwd ymm1, ymm2, ymm3
vpsadbw ymm1, ymm2, ymm3
vpavgb ymm1, ymm2, ymm3
vpabsb ymm1, ymm2
vpsignw ymm1, ymm2, ymm3
vpminub ymm1, ymm2, ymm3
vpmaxsd ymm1, ymm2, ymm3
vpcmpgtq ymm1, ymm2, ymm3
vpcmpeqq ymm1, ymm2, ymm3
vpunpcklbw ymm1, ymm2, ymm3
vpunpckhqdq ymm1, ymm2, ymm3
vpackuswb ymm1, ymm2, ymm3
vpackssdw ymm1, ymm2, ymm3
vpsrad ymm1, ymm2, 5
vpsraw ymm1, ymm2, xmm3
vpsllvq ymm1, ymm2, ymm3
vpsravd ymm1, ymm2, ymm3
vpsrlvd xmm1, xmm2, xmm3
vpalignr ymm1, ymm2, ymm3, 7
vpshufd ymm1, ymm2, 0x1b
vpshufhw ymm1, ymm2, 0x1b
vshufps ymm1, ymm2, ymm3, 0x44
vunpcklpd ymm1, ymm2, ymm3
vpblendw ymm1, ymm2, ymm3, 0xa5
vpmovzxbw ymm1, xmm2
vpmovsxwd ymm1, xmmword ptr [rbx]
vpextrb eax, xmm1, 3
vpextrd dword ptr [rbx], xmm1, 2
vpinsrw xmm1, xmm2, eax, 5
vmovd xmm1, eax
vmovq rax, xmm1
vmovhps xmm1, xmm2, qword ptr [rbx]
vmovlpd qword ptr [rbx], xmm1
vmovshdup ymm1, ymm2
vmovddup ymm1, ymm2
vlddqu ymm1, ymmword ptr [rbx]
vpmaskmovd ymm1, ymm2, ymmword ptr [rbx]
vmaskmovps ymmword ptr [rbx], ymm2, ymm3
vpcmpestri xmm1, xmm2, 0x0c
vpcmpistrm xmm1, xmmword ptr [rbx], 0x44
vphminposuw xmm1, xmm2
vmpsadbw ymm1, ymm2, ymm3, 5
vstmxcsr dword ptr [rbx]
vgatherdpd ymm1, [rbx + xmm2*8], ymm3
vpaddd zmm2, zmm0, dword ptr [rdi]{1to16}
vaddpd zmm1, zmm2, qword ptr [rbx + 0x40]{1to8}
vpandq zmm1{k2}, zmm2, qword ptr [rbx]{1to8}
vpaddd zmm1{k1}{z}, zmm2, zmm3
vpaddd zmm1{k1}, zmm2, zmm3
vmulps zmm1{k3}, zmm2, zmm3
vaddsd xmm1{k1}{z}, xmm2, xmm3
vaddpd zmm1, zmm2, zmm3, {rz-sae}
vsqrtsd xmm1, xmm2, xmm3, {ru-sae}
vcvtusi2sd xmm1, xmm2, rax
vcvttsd2usi rax, xmm1
vpminuq zmm1, zmm2, zmm3
vpmaxsq ymm1, ymm2, ymm3
vpmullq zmm1, zmm2, zmm3
vpternlogq zmm1, zmm2, zmm3, 0x96
vpternlogd ymm1, ymm2, ymmword ptr [rbx], 0xe8
vpcmpud k1, zmm2, zmm3, 1
vpcmpeqb k1{k2}, zmm2, zmm3
vpcmpq k3, ymm2, ymm3, 6
vptestmb k1, zmm2, zmm3
vptestnmq k1, zmm2, zmm3
vpmovb2m k1, zmm2
vpmovm2d zmm1, k2
vpcompressd zmm1{k1}{z}, zmm2
vpexpandq zmm1{k1}, zmm2
vpermt2d zmm1, zmm2, zmm3
vpermi2q zmm1, zmm2, zmm3
vpermw zmm1, zmm2, zmm3
vshufi64x2 zmm1, zmm2, zmm3, 0x4e
valignq zmm1, zmm2, zmm3, 3
vextracti64x4 ymm1, zmm2, 1
vinserti32x8 zmm1, zmm2, ymm3, 1
vextracti32x4 xmmword ptr [rbx], zmm2, 2
vpbroadcastq zmm1, rax
vpbroadcastb zmm1, xmm2
vbroadcasti64x4 zmm1, ymmword ptr [rbx]
vpmovqd ymm1, zmm2
vpmovusdb xmm1, zmm2
vpmovzxbd zmm1, xmm2
vpconflictd zmm1, zmm2
vplzcntq zmm1, zmm2
vprolq zmm1, zmm2, 13
vprorvd zmm1, zmm2, zmm3
vpsraq zmm1, zmm2, 7
vpsllvw zmm1, zmm2, zmm3
vpshufbitqmb k1, zmm2, zmm3
vrcp14pd zmm1, zmm2
vrsqrt14ss xmm1, xmm2, xmm3
vgetexppd zmm1, zmm2
vgetmantsd xmm1, xmm2, xmm3, 2
vscalefpd zmm1, zmm2, zmm3
vrndscalepd zmm1, zmm2, 0x13
vreducepd zmm1, zmm2, 0x21
vrangepd zmm1, zmm2, zmm3, 5
vfixupimmpd zmm1, zmm2, zmm3, 0
vfpclasspd k1, zmm2, 0x81
vblendmps zmm1{k1}, zmm2, zmm3
vcvtqq2pd zmm1, zmm2
vcvtpd2udq ymm1, zmm2
vcvttps2uqq zmm1, ymm2
vfmadd231pd zmm1{k1}, zmm2, qword ptr [rbx]{1to8}
vmovdqu8 zmm1{k1}, zmmword ptr [rbx]
vmovdqu16 zmmword ptr [rbx]{k1}, zmm1
vmovdqa64 zmm1{k1}{z}, zmm2
vmovups xmmword ptr [rbx]{k2}, xmm1
vmovsd xmm1{k1}{z}, qword ptr [rbx]
vpsadbw zmm1, zmm2, zmm3
vpopcntq zmm1, zmm2
vpdpbusd zmm1, zmm2, zmm3
vpmadd52luq zmm1, zmm2, zmm3
vpshldq zmm1, zmm2, zmm3, 5
vgf2p8mulb zmm1, zmm2, zmm3
vaesenc zmm1, zmm2, zmm3
kandw k1, k2, k3
korb k1, k2, k3
kxnorq k1, k2, k3
knotd k1, k2
kshiftlw k1, k2, 3
kshiftrq k1, k2, 33
kunpckbw k1, k2, k3
kaddq k1, k2, k3
kortestw k1, k2
ktestq k1, k2
kmovd eax, k1
kmovw k1, word ptr [rbx]
andn rax, rbx, qword ptr [rcx]
bextr eax, ebx, ecx
bextr rax, qword ptr [rbx], rcx
blsi eax, ebx
blsmsk rax, qword ptr [rbx]
blsr eax, ebx
bzhi rax, rbx, rcx
bzhi eax, dword ptr [rbx], ecx
mulx rax, rbx, rcx
mulx eax, ebx, ecx
pdep rax, rbx, qword ptr [rcx]
pext eax, ebx, ecx
rorx rax, qword ptr [rbx], 17
sarx eax, ebx, ecx
shlx rax, rbx, rcx
shrx rax, qword ptr [rbx], rcx
