; ModuleID = '<string>'
source_filename = "<string>"
target triple = "unknown-unknown-unknown"

; Function Attrs: alwaysinline nounwind
define internal void @hpvm_node_Softmax_0_softmax.body(ptr %.1, i64 %.2, i64 %.3, ptr %.4, i64 %.5, i64 %.6, i64 %.7, i64 %.8, i64 %.9) #0 {
entry:
  %strip0.counter = alloca i64, align 8
  %base = alloca i64, i64 16, align 8
  %top = alloca float, i64 16, align 4
  %lane.counter = alloca i64, align 8
  %lane = alloca i64, align 8
  %a.counter = alloca i64, align 8
  %a = alloca i64, align 8
  %lane.counter.1 = alloca i64, align 8
  %lane.1 = alloca i64, align 8
  %total = alloca float, i64 16, align 4
  %lane.counter.2 = alloca i64, align 8
  %lane.2 = alloca i64, align 8
  %a1.counter = alloca i64, align 8
  %a1 = alloca i64, align 8
  %lane.counter.3 = alloca i64, align 8
  %lane.3 = alloca i64, align 8
  %a2.counter = alloca i64, align 8
  %a2 = alloca i64, align 8
  %lane.counter.4 = alloca i64, align 8
  %lane.4 = alloca i64, align 8
  %instance0.counter = alloca i64, align 8
  %i = alloca i64, align 8
  %base.1 = alloca i64, align 8
  %top.1 = alloca float, align 4
  %a.counter.1 = alloca i64, align 8
  %a.1 = alloca i64, align 8
  %total.1 = alloca float, align 4
  %a1.counter.1 = alloca i64, align 8
  %a1.1 = alloca i64, align 8
  %a2.counter.1 = alloca i64, align 8
  %a2.1 = alloca i64, align 8
  br label %start

start:                                            ; preds = %entry
  %.11 = sub i64 %.9, %.8
  %.12 = sdiv i64 %.11, 16
  %.13 = mul i64 %.12, 16
  %.14 = add i64 %.8, %.13
  store i64 %.8, ptr %strip0.counter, align 4
  br label %strip0.cond

strip0.cond:                                      ; preds = %strip0.next, %start
  %.17 = load i64, ptr %strip0.counter, align 4
  %.18 = icmp slt i64 %.17, %.14
  br i1 %.18, label %strip0.body, label %strip0.end

strip0.body:                                      ; preds = %strip0.cond
  call void @llvm.memset.p0.i64(ptr %base, i8 0, i64 128, i1 false)
  call void @llvm.memset.p0.i64(ptr %top, i8 0, i64 64, i1 false)
  store i64 0, ptr %lane.counter, align 4
  br label %lane.cond

strip0.next:                                      ; preds = %a2.end
  %.185 = load i64, ptr %strip0.counter, align 4
  %.186 = add i64 %.185, 16
  store i64 %.186, ptr %strip0.counter, align 4
  br label %strip0.cond, !llvm.loop !0

strip0.end:                                       ; preds = %strip0.cond
  store i64 %.14, ptr %instance0.counter, align 4
  br label %instance0.cond

lane.cond:                                        ; preds = %lane.next, %strip0.body
  %.24 = load i64, ptr %lane.counter, align 4
  %.25 = icmp slt i64 %.24, 16
  br i1 %.25, label %lane.body, label %lane.end

lane.body:                                        ; preds = %lane.cond
  store i64 %.24, ptr %lane, align 4
  %.28 = load i64, ptr %lane, align 4
  %.29 = getelementptr inbounds i64, ptr %base, i64 %.28
  %.30 = load i64, ptr %lane, align 4
  %.31 = add i64 %.17, %.30
  %.32 = mul i64 %.31, 128
  store i64 %.32, ptr %.29, align 8, !llvm.access.group !3
  %.34 = load i64, ptr %lane, align 4
  %.35 = getelementptr inbounds float, ptr %top, i64 %.34
  %.36 = load i64, ptr %lane, align 4
  %.37 = getelementptr inbounds i64, ptr %base, i64 %.36
  %.38 = load i64, ptr %.37, align 8, !llvm.access.group !3
  %.39 = getelementptr inbounds float, ptr %.1, i64 %.38
  %.40 = load float, ptr %.39, align 4, !llvm.access.group !4
  store float %.40, ptr %.35, align 4, !llvm.access.group !3
  br label %lane.next

lane.next:                                        ; preds = %lane.body
  %.43 = load i64, ptr %lane.counter, align 4
  %.44 = add i64 %.43, 1
  store i64 %.44, ptr %lane.counter, align 4
  br label %lane.cond, !llvm.loop !5

lane.end:                                         ; preds = %lane.cond
  store i64 1, ptr %a.counter, align 4
  br label %a.cond

a.cond:                                           ; preds = %a.next, %lane.end
  %.49 = load i64, ptr %a.counter, align 4
  %.50 = icmp slt i64 %.49, 128
  br i1 %.50, label %a.body, label %a.end

a.body:                                           ; preds = %a.cond
  store i64 %.49, ptr %a, align 4
  store i64 0, ptr %lane.counter.1, align 4
  br label %lane.cond.1

a.next:                                           ; preds = %lane.end.1
  %.79 = load i64, ptr %a.counter, align 4
  %.80 = add i64 %.79, 1
  store i64 %.80, ptr %a.counter, align 4
  br label %a.cond

a.end:                                            ; preds = %a.cond
  call void @llvm.memset.p0.i64(ptr %total, i8 0, i64 64, i1 false)
  store i64 0, ptr %lane.counter.2, align 4
  br label %lane.cond.2

lane.cond.1:                                      ; preds = %lane.next.1, %a.body
  %.55 = load i64, ptr %lane.counter.1, align 4
  %.56 = icmp slt i64 %.55, 16
  br i1 %.56, label %lane.body.1, label %lane.end.1

lane.body.1:                                      ; preds = %lane.cond.1
  store i64 %.55, ptr %lane.1, align 4
  %.59 = load i64, ptr %lane.1, align 4
  %.60 = getelementptr inbounds float, ptr %top, i64 %.59
  %.61 = load i64, ptr %lane.1, align 4
  %.62 = getelementptr inbounds float, ptr %top, i64 %.61
  %.63 = load float, ptr %.62, align 4, !llvm.access.group !8
  %.64 = load i64, ptr %lane.1, align 4
  %.65 = getelementptr inbounds i64, ptr %base, i64 %.64
  %.66 = load i64, ptr %.65, align 8, !llvm.access.group !8
  %.67 = load i64, ptr %a, align 4
  %.68 = add i64 %.66, %.67
  %.69 = getelementptr inbounds float, ptr %.1, i64 %.68
  %.70 = load float, ptr %.69, align 4, !llvm.access.group !9
  %.71 = call float @llvm.maxnum.f32(float %.63, float %.70)
  store float %.71, ptr %.60, align 4, !llvm.access.group !8
  br label %lane.next.1

lane.next.1:                                      ; preds = %lane.body.1
  %.74 = load i64, ptr %lane.counter.1, align 4
  %.75 = add i64 %.74, 1
  store i64 %.75, ptr %lane.counter.1, align 4
  br label %lane.cond.1, !llvm.loop !10

lane.end.1:                                       ; preds = %lane.cond.1
  br label %a.next

lane.cond.2:                                      ; preds = %lane.next.2, %a.end
  %.86 = load i64, ptr %lane.counter.2, align 4
  %.87 = icmp slt i64 %.86, 16
  br i1 %.87, label %lane.body.2, label %lane.end.2

lane.body.2:                                      ; preds = %lane.cond.2
  store i64 %.86, ptr %lane.2, align 4
  %.90 = load i64, ptr %lane.2, align 4
  %.91 = getelementptr inbounds float, ptr %total, i64 %.90
  store float 0.000000e+00, ptr %.91, align 4, !llvm.access.group !12
  br label %lane.next.2

lane.next.2:                                      ; preds = %lane.body.2
  %.94 = load i64, ptr %lane.counter.2, align 4
  %.95 = add i64 %.94, 1
  store i64 %.95, ptr %lane.counter.2, align 4
  br label %lane.cond.2, !llvm.loop !13

lane.end.2:                                       ; preds = %lane.cond.2
  store i64 0, ptr %a1.counter, align 4
  br label %a1.cond

a1.cond:                                          ; preds = %a1.next, %lane.end.2
  %.100 = load i64, ptr %a1.counter, align 4
  %.101 = icmp slt i64 %.100, 128
  br i1 %.101, label %a1.body, label %a1.end

a1.body:                                          ; preds = %a1.cond
  store i64 %.100, ptr %a1, align 4
  store i64 0, ptr %lane.counter.3, align 4
  br label %lane.cond.3

a1.next:                                          ; preds = %lane.end.3
  %.135 = load i64, ptr %a1.counter, align 4
  %.136 = add i64 %.135, 1
  store i64 %.136, ptr %a1.counter, align 4
  br label %a1.cond

a1.end:                                           ; preds = %a1.cond
  store i64 0, ptr %a2.counter, align 4
  br label %a2.cond

lane.cond.3:                                      ; preds = %lane.next.3, %a1.body
  %.106 = load i64, ptr %lane.counter.3, align 4
  %.107 = icmp slt i64 %.106, 16
  br i1 %.107, label %lane.body.3, label %lane.end.3

lane.body.3:                                      ; preds = %lane.cond.3
  store i64 %.106, ptr %lane.3, align 4
  %.110 = load i64, ptr %lane.3, align 4
  %.111 = getelementptr inbounds float, ptr %total, i64 %.110
  %.112 = load i64, ptr %lane.3, align 4
  %.113 = getelementptr inbounds float, ptr %total, i64 %.112
  %.114 = load float, ptr %.113, align 4, !llvm.access.group !15
  %.115 = load i64, ptr %lane.3, align 4
  %.116 = getelementptr inbounds i64, ptr %base, i64 %.115
  %.117 = load i64, ptr %.116, align 8, !llvm.access.group !15
  %.118 = load i64, ptr %a1, align 4
  %.119 = add i64 %.117, %.118
  %.120 = getelementptr inbounds float, ptr %.1, i64 %.119
  %.121 = load float, ptr %.120, align 4, !llvm.access.group !16
  %.122 = load i64, ptr %lane.3, align 4
  %.123 = getelementptr inbounds float, ptr %top, i64 %.122
  %.124 = load float, ptr %.123, align 4, !llvm.access.group !15
  %.125 = fsub float %.121, %.124
  %.126 = call float @llvm.exp.f32(float %.125)
  %.127 = fadd float %.114, %.126
  store float %.127, ptr %.111, align 4, !llvm.access.group !15
  br label %lane.next.3

lane.next.3:                                      ; preds = %lane.body.3
  %.130 = load i64, ptr %lane.counter.3, align 4
  %.131 = add i64 %.130, 1
  store i64 %.131, ptr %lane.counter.3, align 4
  br label %lane.cond.3, !llvm.loop !17

lane.end.3:                                       ; preds = %lane.cond.3
  br label %a1.next

a2.cond:                                          ; preds = %a2.next, %a1.end
  %.141 = load i64, ptr %a2.counter, align 4
  %.142 = icmp slt i64 %.141, 128
  br i1 %.142, label %a2.body, label %a2.end

a2.body:                                          ; preds = %a2.cond
  store i64 %.141, ptr %a2, align 4
  store i64 0, ptr %lane.counter.4, align 4
  br label %lane.cond.4

a2.next:                                          ; preds = %lane.end.4
  %.180 = load i64, ptr %a2.counter, align 4
  %.181 = add i64 %.180, 1
  store i64 %.181, ptr %a2.counter, align 4
  br label %a2.cond

a2.end:                                           ; preds = %a2.cond
  br label %strip0.next

lane.cond.4:                                      ; preds = %lane.next.4, %a2.body
  %.147 = load i64, ptr %lane.counter.4, align 4
  %.148 = icmp slt i64 %.147, 16
  br i1 %.148, label %lane.body.4, label %lane.end.4

lane.body.4:                                      ; preds = %lane.cond.4
  store i64 %.147, ptr %lane.4, align 4
  %.151 = load i64, ptr %lane.4, align 4
  %.152 = getelementptr inbounds i64, ptr %base, i64 %.151
  %.153 = load i64, ptr %.152, align 8, !llvm.access.group !19
  %.154 = load i64, ptr %a2, align 4
  %.155 = add i64 %.153, %.154
  %.156 = getelementptr inbounds float, ptr %.4, i64 %.155
  %.157 = load i64, ptr %lane.4, align 4
  %.158 = getelementptr inbounds i64, ptr %base, i64 %.157
  %.159 = load i64, ptr %.158, align 8, !llvm.access.group !19
  %.160 = load i64, ptr %a2, align 4
  %.161 = add i64 %.159, %.160
  %.162 = getelementptr inbounds float, ptr %.1, i64 %.161
  %.163 = load float, ptr %.162, align 4, !llvm.access.group !20
  %.164 = load i64, ptr %lane.4, align 4
  %.165 = getelementptr inbounds float, ptr %top, i64 %.164
  %.166 = load float, ptr %.165, align 4, !llvm.access.group !19
  %.167 = fsub float %.163, %.166
  %.168 = call float @llvm.exp.f32(float %.167)
  %.169 = load i64, ptr %lane.4, align 4
  %.170 = getelementptr inbounds float, ptr %total, i64 %.169
  %.171 = load float, ptr %.170, align 4, !llvm.access.group !19
  %.172 = fdiv float %.168, %.171
  store float %.172, ptr %.156, align 4, !llvm.access.group !20
  br label %lane.next.4

lane.next.4:                                      ; preds = %lane.body.4
  %.175 = load i64, ptr %lane.counter.4, align 4
  %.176 = add i64 %.175, 1
  store i64 %.176, ptr %lane.counter.4, align 4
  br label %lane.cond.4, !llvm.loop !21

lane.end.4:                                       ; preds = %lane.cond.4
  br label %a2.next

instance0.cond:                                   ; preds = %instance0.next, %strip0.end
  %.191 = load i64, ptr %instance0.counter, align 4
  %.192 = icmp slt i64 %.191, %.9
  br i1 %.192, label %instance0.body, label %instance0.end

instance0.body:                                   ; preds = %instance0.cond
  store i64 %.191, ptr %i, align 4
  %.195 = load i64, ptr %i, align 4
  %.196 = mul i64 %.195, 128
  store i64 %.196, ptr %base.1, align 4
  %.198 = load i64, ptr %base.1, align 4
  %.199 = getelementptr inbounds float, ptr %.1, i64 %.198
  %.200 = load float, ptr %.199, align 4, !llvm.access.group !23
  store float %.200, ptr %top.1, align 4
  store i64 1, ptr %a.counter.1, align 4
  br label %a.cond.1

instance0.next:                                   ; preds = %a2.end.1
  %.271 = load i64, ptr %instance0.counter, align 4
  %.272 = add i64 %.271, 1
  store i64 %.272, ptr %instance0.counter, align 4
  br label %instance0.cond, !llvm.loop !24

instance0.end:                                    ; preds = %instance0.cond
  ret void

a.cond.1:                                         ; preds = %a.next.1, %instance0.body
  %.204 = load i64, ptr %a.counter.1, align 4
  %.205 = icmp slt i64 %.204, 128
  br i1 %.205, label %a.body.1, label %a.end.1

a.body.1:                                         ; preds = %a.cond.1
  store i64 %.204, ptr %a.1, align 4
  %.208 = load float, ptr %top.1, align 4
  %.209 = load i64, ptr %base.1, align 4
  %.210 = load i64, ptr %a.1, align 4
  %.211 = add i64 %.209, %.210
  %.212 = getelementptr inbounds float, ptr %.1, i64 %.211
  %.213 = load float, ptr %.212, align 4, !llvm.access.group !23
  %.214 = call float @llvm.maxnum.f32(float %.208, float %.213)
  store float %.214, ptr %top.1, align 4
  br label %a.next.1

a.next.1:                                         ; preds = %a.body.1
  %.217 = load i64, ptr %a.counter.1, align 4
  %.218 = add i64 %.217, 1
  store i64 %.218, ptr %a.counter.1, align 4
  br label %a.cond.1

a.end.1:                                          ; preds = %a.cond.1
  store float 0.000000e+00, ptr %total.1, align 4
  store i64 0, ptr %a1.counter.1, align 4
  br label %a1.cond.1

a1.cond.1:                                        ; preds = %a1.next.1, %a.end.1
  %.224 = load i64, ptr %a1.counter.1, align 4
  %.225 = icmp slt i64 %.224, 128
  br i1 %.225, label %a1.body.1, label %a1.end.1

a1.body.1:                                        ; preds = %a1.cond.1
  store i64 %.224, ptr %a1.1, align 4
  %.228 = load float, ptr %total.1, align 4
  %.229 = load i64, ptr %base.1, align 4
  %.230 = load i64, ptr %a1.1, align 4
  %.231 = add i64 %.229, %.230
  %.232 = getelementptr inbounds float, ptr %.1, i64 %.231
  %.233 = load float, ptr %.232, align 4, !llvm.access.group !23
  %.234 = load float, ptr %top.1, align 4
  %.235 = fsub float %.233, %.234
  %.236 = call float @llvm.exp.f32(float %.235)
  %.237 = fadd float %.228, %.236
  store float %.237, ptr %total.1, align 4
  br label %a1.next.1

a1.next.1:                                        ; preds = %a1.body.1
  %.240 = load i64, ptr %a1.counter.1, align 4
  %.241 = add i64 %.240, 1
  store i64 %.241, ptr %a1.counter.1, align 4
  br label %a1.cond.1

a1.end.1:                                         ; preds = %a1.cond.1
  store i64 0, ptr %a2.counter.1, align 4
  br label %a2.cond.1

a2.cond.1:                                        ; preds = %a2.next.1, %a1.end.1
  %.246 = load i64, ptr %a2.counter.1, align 4
  %.247 = icmp slt i64 %.246, 128
  br i1 %.247, label %a2.body.1, label %a2.end.1

a2.body.1:                                        ; preds = %a2.cond.1
  store i64 %.246, ptr %a2.1, align 4
  %.250 = load i64, ptr %base.1, align 4
  %.251 = load i64, ptr %a2.1, align 4
  %.252 = add i64 %.250, %.251
  %.253 = getelementptr inbounds float, ptr %.4, i64 %.252
  %.254 = load i64, ptr %base.1, align 4
  %.255 = load i64, ptr %a2.1, align 4
  %.256 = add i64 %.254, %.255
  %.257 = getelementptr inbounds float, ptr %.1, i64 %.256
  %.258 = load float, ptr %.257, align 4, !llvm.access.group !23
  %.259 = load float, ptr %top.1, align 4
  %.260 = fsub float %.258, %.259
  %.261 = call float @llvm.exp.f32(float %.260)
  %.262 = load float, ptr %total.1, align 4
  %.263 = fdiv float %.261, %.262
  store float %.263, ptr %.253, align 4, !llvm.access.group !23
  br label %a2.next.1

a2.next.1:                                        ; preds = %a2.body.1
  %.266 = load i64, ptr %a2.counter.1, align 4
  %.267 = add i64 %.266, 1
  store i64 %.267, ptr %a2.counter.1, align 4
  br label %a2.cond.1

a2.end.1:                                         ; preds = %a2.cond.1
  br label %instance0.next
}

; Function Attrs: nocallback nofree nounwind willreturn memory(argmem: write)
declare void @llvm.memset.p0.i64(ptr writeonly captures(none), i8, i64, i1 immarg) #1

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare float @llvm.maxnum.f32(float, float) #2

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare float @llvm.exp.f32(float) #2

; Function Attrs: nounwind
define void @hpvm_node_Softmax_0_softmax(ptr %slots, i64 %dim0_begin, i64 %dim0_end) #3 {
entry:
  %.5 = getelementptr inbounds i64, ptr %slots, i64 0
  %.6 = load i64, ptr %.5, align 8
  %.7 = getelementptr inbounds i64, ptr %slots, i64 1
  %.8 = load ptr, ptr %.7, align 8
  %.9 = getelementptr inbounds i64, ptr %slots, i64 2
  %.10 = load i64, ptr %.9, align 8
  %.11 = getelementptr inbounds i64, ptr %slots, i64 3
  %.12 = load i64, ptr %.11, align 8
  %.13 = getelementptr inbounds i64, ptr %slots, i64 4
  %.14 = load ptr, ptr %.13, align 8
  %.15 = getelementptr inbounds i64, ptr %slots, i64 5
  %.16 = load i64, ptr %.15, align 8
  %.17 = getelementptr inbounds i64, ptr %slots, i64 6
  %.18 = load i64, ptr %.17, align 8
  call void @hpvm_node_Softmax_0_softmax.body(ptr %.8, i64 %.10, i64 %.12, ptr %.14, i64 %.16, i64 %.18, i64 %.6, i64 %dim0_begin, i64 %dim0_end)
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nocallback nofree nounwind willreturn memory(argmem: write) }
attributes #2 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #3 = { nounwind }

!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.parallel_accesses", !2}
!2 = distinct !{}
!3 = distinct !{}
!4 = !{!3, !2}
!5 = distinct !{!5, !6, !7}
!6 = !{!"llvm.loop.parallel_accesses", !3}
!7 = !{!"llvm.loop.vectorize.enable", i1 true}
!8 = distinct !{}
!9 = !{!8, !2}
!10 = distinct !{!10, !11, !7}
!11 = !{!"llvm.loop.parallel_accesses", !8}
!12 = distinct !{}
!13 = distinct !{!13, !14, !7}
!14 = !{!"llvm.loop.parallel_accesses", !12}
!15 = distinct !{}
!16 = !{!15, !2}
!17 = distinct !{!17, !18, !7}
!18 = !{!"llvm.loop.parallel_accesses", !15}
!19 = distinct !{}
!20 = !{!19, !2}
!21 = distinct !{!21, !22, !7}
!22 = !{!"llvm.loop.parallel_accesses", !19}
!23 = distinct !{}
!24 = distinct !{!24, !25}
!25 = !{!"llvm.loop.parallel_accesses", !23}
