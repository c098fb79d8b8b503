;; The WebAssembly SIMD128 peak of this browser and machine, for the benchmark's "share of the
;; peak": eight independent f32x4 multiply-then-add chains, 64 FLOP an iteration. Eight chains
;; of a 4-cycle multiply and a 4-cycle add keep two vector units busy every cycle, so the loop is
;; bound by throughput, not latency. Plain SIMD128 has no fused multiply-add (relaxed SIMD's
;; f32x4.relaxed_madd would count twice the FLOP an instruction). `run(n)` runs n iterations
;; and returns a lane of the sum, so that no work can be dropped.
(module
  (func (export "run") (param $n i32) (result f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local $m v128) (local $b v128)
    (local.set $m (f32x4.splat (f32.const 0.999)))
    (local.set $b (f32x4.splat (f32.const 0.001)))
    (local.set $a0 (f32x4.splat (f32.const 1)))
    (local.set $a1 (f32x4.splat (f32.const 2)))
    (local.set $a2 (f32x4.splat (f32.const 3)))
    (local.set $a3 (f32x4.splat (f32.const 4)))
    (local.set $a4 (f32x4.splat (f32.const 5)))
    (local.set $a5 (f32x4.splat (f32.const 6)))
    (local.set $a6 (f32x4.splat (f32.const 7)))
    (local.set $a7 (f32x4.splat (f32.const 8)))
    (loop $iterate
      (local.set $a0 (f32x4.add (f32x4.mul (local.get $a0) (local.get $m)) (local.get $b)))
      (local.set $a1 (f32x4.add (f32x4.mul (local.get $a1) (local.get $m)) (local.get $b)))
      (local.set $a2 (f32x4.add (f32x4.mul (local.get $a2) (local.get $m)) (local.get $b)))
      (local.set $a3 (f32x4.add (f32x4.mul (local.get $a3) (local.get $m)) (local.get $b)))
      (local.set $a4 (f32x4.add (f32x4.mul (local.get $a4) (local.get $m)) (local.get $b)))
      (local.set $a5 (f32x4.add (f32x4.mul (local.get $a5) (local.get $m)) (local.get $b)))
      (local.set $a6 (f32x4.add (f32x4.mul (local.get $a6) (local.get $m)) (local.get $b)))
      (local.set $a7 (f32x4.add (f32x4.mul (local.get $a7) (local.get $m)) (local.get $b)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $iterate (local.get $n)))
    (f32x4.extract_lane 0
      (f32x4.add
        (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3)))
        (f32x4.add (f32x4.add (local.get $a4) (local.get $a5)) (f32x4.add (local.get $a6) (local.get $a7)))))))
