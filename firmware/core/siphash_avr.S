/* SipHash rounds with the state in r0-r31 (written by firmware/tools/gen_siphash_avr.py;
 * do not edit). Interrupts may run: avr-gcc's handlers save r0/r1 and clear r1. */
#ifdef __AVR__

.section .bss
.global siphash_avr_v
.type siphash_avr_v, @object
siphash_avr_v:
    .zero 32
.size siphash_avr_v, 32

.section .text
.global siphash_avr_rounds2
.type siphash_avr_rounds2, @function
siphash_avr_rounds2:
    push r2
    push r3
    push r4
    push r5
    push r6
    push r7
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    push r16
    push r17
    push r28
    push r29
    lds r0, siphash_avr_v+0
    lds r1, siphash_avr_v+1
    lds r2, siphash_avr_v+2
    lds r3, siphash_avr_v+3
    lds r4, siphash_avr_v+4
    lds r5, siphash_avr_v+5
    lds r6, siphash_avr_v+6
    lds r7, siphash_avr_v+7
    lds r8, siphash_avr_v+8
    lds r9, siphash_avr_v+9
    lds r10, siphash_avr_v+10
    lds r11, siphash_avr_v+11
    lds r12, siphash_avr_v+12
    lds r13, siphash_avr_v+13
    lds r14, siphash_avr_v+14
    lds r15, siphash_avr_v+15
    lds r16, siphash_avr_v+16
    lds r17, siphash_avr_v+17
    lds r18, siphash_avr_v+18
    lds r19, siphash_avr_v+19
    lds r20, siphash_avr_v+20
    lds r21, siphash_avr_v+21
    lds r22, siphash_avr_v+22
    lds r23, siphash_avr_v+23
    lds r24, siphash_avr_v+24
    lds r25, siphash_avr_v+25
    lds r26, siphash_avr_v+26
    lds r27, siphash_avr_v+27
    lds r28, siphash_avr_v+28
    lds r29, siphash_avr_v+29
    lds r30, siphash_avr_v+30
    lds r31, siphash_avr_v+31
    add r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    adc r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    add r16, r24
    adc r17, r25
    adc r18, r26
    adc r19, r27
    adc r20, r28
    adc r21, r29
    adc r22, r30
    adc r23, r31
    eor r30, r16
    eor r31, r17
    eor r24, r18
    eor r25, r19
    eor r26, r20
    eor r27, r21
    eor r28, r22
    eor r29, r23
    add r4, r30
    adc r5, r31
    adc r6, r24
    adc r7, r25
    adc r0, r26
    adc r1, r27
    adc r2, r28
    adc r3, r29
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    eor r27, r4
    eor r28, r5
    eor r29, r6
    eor r30, r7
    eor r31, r0
    eor r24, r1
    eor r25, r2
    eor r26, r3
    add r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    adc r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    bst r11, 7
    lsl r12
    rol r13
    rol r14
    rol r15
    rol r8
    rol r9
    rol r10
    rol r11
    bld r12, 0
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    add r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    adc r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    add r20, r27
    adc r21, r28
    adc r22, r29
    adc r23, r30
    adc r16, r31
    adc r17, r24
    adc r18, r25
    adc r19, r26
    eor r25, r20
    eor r26, r21
    eor r27, r22
    eor r28, r23
    eor r29, r16
    eor r30, r17
    eor r31, r18
    eor r24, r19
    add r0, r25
    adc r1, r26
    adc r2, r27
    adc r3, r28
    adc r4, r29
    adc r5, r30
    adc r6, r31
    adc r7, r24
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    eor r30, r0
    eor r31, r1
    eor r24, r2
    eor r25, r3
    eor r26, r4
    eor r27, r5
    eor r28, r6
    eor r29, r7
    add r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    adc r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    bst r15, 7
    lsl r8
    rol r9
    rol r10
    rol r11
    rol r12
    rol r13
    rol r14
    rol r15
    bld r8, 0
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    sts siphash_avr_v+0, r0
    sts siphash_avr_v+1, r1
    sts siphash_avr_v+2, r2
    sts siphash_avr_v+3, r3
    sts siphash_avr_v+4, r4
    sts siphash_avr_v+5, r5
    sts siphash_avr_v+6, r6
    sts siphash_avr_v+7, r7
    sts siphash_avr_v+8, r8
    sts siphash_avr_v+9, r9
    sts siphash_avr_v+10, r10
    sts siphash_avr_v+11, r11
    sts siphash_avr_v+12, r12
    sts siphash_avr_v+13, r13
    sts siphash_avr_v+14, r14
    sts siphash_avr_v+15, r15
    sts siphash_avr_v+16, r16
    sts siphash_avr_v+17, r17
    sts siphash_avr_v+18, r18
    sts siphash_avr_v+19, r19
    sts siphash_avr_v+20, r20
    sts siphash_avr_v+21, r21
    sts siphash_avr_v+22, r22
    sts siphash_avr_v+23, r23
    sts siphash_avr_v+24, r30
    sts siphash_avr_v+25, r31
    sts siphash_avr_v+26, r24
    sts siphash_avr_v+27, r25
    sts siphash_avr_v+28, r26
    sts siphash_avr_v+29, r27
    sts siphash_avr_v+30, r28
    sts siphash_avr_v+31, r29
    clr r1
    pop r29
    pop r28
    pop r17
    pop r16
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop r7
    pop r6
    pop r5
    pop r4
    pop r3
    pop r2
    ret
.size siphash_avr_rounds2, .-siphash_avr_rounds2

.global siphash_avr_rounds4
.type siphash_avr_rounds4, @function
siphash_avr_rounds4:
    push r2
    push r3
    push r4
    push r5
    push r6
    push r7
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    push r16
    push r17
    push r28
    push r29
    lds r0, siphash_avr_v+0
    lds r1, siphash_avr_v+1
    lds r2, siphash_avr_v+2
    lds r3, siphash_avr_v+3
    lds r4, siphash_avr_v+4
    lds r5, siphash_avr_v+5
    lds r6, siphash_avr_v+6
    lds r7, siphash_avr_v+7
    lds r8, siphash_avr_v+8
    lds r9, siphash_avr_v+9
    lds r10, siphash_avr_v+10
    lds r11, siphash_avr_v+11
    lds r12, siphash_avr_v+12
    lds r13, siphash_avr_v+13
    lds r14, siphash_avr_v+14
    lds r15, siphash_avr_v+15
    lds r16, siphash_avr_v+16
    lds r17, siphash_avr_v+17
    lds r18, siphash_avr_v+18
    lds r19, siphash_avr_v+19
    lds r20, siphash_avr_v+20
    lds r21, siphash_avr_v+21
    lds r22, siphash_avr_v+22
    lds r23, siphash_avr_v+23
    lds r24, siphash_avr_v+24
    lds r25, siphash_avr_v+25
    lds r26, siphash_avr_v+26
    lds r27, siphash_avr_v+27
    lds r28, siphash_avr_v+28
    lds r29, siphash_avr_v+29
    lds r30, siphash_avr_v+30
    lds r31, siphash_avr_v+31
    add r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    adc r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    add r16, r24
    adc r17, r25
    adc r18, r26
    adc r19, r27
    adc r20, r28
    adc r21, r29
    adc r22, r30
    adc r23, r31
    eor r30, r16
    eor r31, r17
    eor r24, r18
    eor r25, r19
    eor r26, r20
    eor r27, r21
    eor r28, r22
    eor r29, r23
    add r4, r30
    adc r5, r31
    adc r6, r24
    adc r7, r25
    adc r0, r26
    adc r1, r27
    adc r2, r28
    adc r3, r29
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    bst r27, 0
    lsr r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    bld r26, 7
    eor r27, r4
    eor r28, r5
    eor r29, r6
    eor r30, r7
    eor r31, r0
    eor r24, r1
    eor r25, r2
    eor r26, r3
    add r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    adc r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    bst r11, 7
    lsl r12
    rol r13
    rol r14
    rol r15
    rol r8
    rol r9
    rol r10
    rol r11
    bld r12, 0
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    add r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    adc r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    add r20, r27
    adc r21, r28
    adc r22, r29
    adc r23, r30
    adc r16, r31
    adc r17, r24
    adc r18, r25
    adc r19, r26
    eor r25, r20
    eor r26, r21
    eor r27, r22
    eor r28, r23
    eor r29, r16
    eor r30, r17
    eor r31, r18
    eor r24, r19
    add r0, r25
    adc r1, r26
    adc r2, r27
    adc r3, r28
    adc r4, r29
    adc r5, r30
    adc r6, r31
    adc r7, r24
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    bst r30, 0
    lsr r29
    ror r28
    ror r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    bld r29, 7
    eor r30, r0
    eor r31, r1
    eor r24, r2
    eor r25, r3
    eor r26, r4
    eor r27, r5
    eor r28, r6
    eor r29, r7
    add r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    adc r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    bst r15, 7
    lsl r8
    rol r9
    rol r10
    rol r11
    rol r12
    rol r13
    rol r14
    rol r15
    bld r8, 0
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    add r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    adc r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    bst r14, 0
    lsr r13
    ror r12
    ror r11
    ror r10
    ror r9
    ror r8
    ror r15
    ror r14
    bld r13, 7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    add r16, r30
    adc r17, r31
    adc r18, r24
    adc r19, r25
    adc r20, r26
    adc r21, r27
    adc r22, r28
    adc r23, r29
    eor r28, r16
    eor r29, r17
    eor r30, r18
    eor r31, r19
    eor r24, r20
    eor r25, r21
    eor r26, r22
    eor r27, r23
    add r4, r28
    adc r5, r29
    adc r6, r30
    adc r7, r31
    adc r0, r24
    adc r1, r25
    adc r2, r26
    adc r3, r27
    bst r25, 0
    lsr r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    ror r26
    ror r25
    bld r24, 7
    bst r25, 0
    lsr r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    ror r26
    ror r25
    bld r24, 7
    bst r25, 0
    lsr r24
    ror r31
    ror r30
    ror r29
    ror r28
    ror r27
    ror r26
    ror r25
    bld r24, 7
    eor r25, r4
    eor r26, r5
    eor r27, r6
    eor r28, r7
    eor r29, r0
    eor r30, r1
    eor r31, r2
    eor r24, r3
    add r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    adc r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    bst r11, 7
    lsl r12
    rol r13
    rol r14
    rol r15
    rol r8
    rol r9
    rol r10
    rol r11
    bld r12, 0
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    add r4, r12
    adc r5, r13
    adc r6, r14
    adc r7, r15
    adc r0, r8
    adc r1, r9
    adc r2, r10
    adc r3, r11
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    bst r10, 0
    lsr r9
    ror r8
    ror r15
    ror r14
    ror r13
    ror r12
    ror r11
    ror r10
    bld r9, 7
    eor r10, r4
    eor r11, r5
    eor r12, r6
    eor r13, r7
    eor r14, r0
    eor r15, r1
    eor r8, r2
    eor r9, r3
    add r20, r25
    adc r21, r26
    adc r22, r27
    adc r23, r28
    adc r16, r29
    adc r17, r30
    adc r18, r31
    adc r19, r24
    eor r31, r20
    eor r24, r21
    eor r25, r22
    eor r26, r23
    eor r27, r16
    eor r28, r17
    eor r29, r18
    eor r30, r19
    add r0, r31
    adc r1, r24
    adc r2, r25
    adc r3, r26
    adc r4, r27
    adc r5, r28
    adc r6, r29
    adc r7, r30
    bst r28, 0
    lsr r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    bld r27, 7
    bst r28, 0
    lsr r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    bld r27, 7
    bst r28, 0
    lsr r27
    ror r26
    ror r25
    ror r24
    ror r31
    ror r30
    ror r29
    ror r28
    bld r27, 7
    eor r28, r0
    eor r29, r1
    eor r30, r2
    eor r31, r3
    eor r24, r4
    eor r25, r5
    eor r26, r6
    eor r27, r7
    add r20, r10
    adc r21, r11
    adc r22, r12
    adc r23, r13
    adc r16, r14
    adc r17, r15
    adc r18, r8
    adc r19, r9
    bst r15, 7
    lsl r8
    rol r9
    rol r10
    rol r11
    rol r12
    rol r13
    rol r14
    rol r15
    bld r8, 0
    eor r8, r20
    eor r9, r21
    eor r10, r22
    eor r11, r23
    eor r12, r16
    eor r13, r17
    eor r14, r18
    eor r15, r19
    sts siphash_avr_v+0, r0
    sts siphash_avr_v+1, r1
    sts siphash_avr_v+2, r2
    sts siphash_avr_v+3, r3
    sts siphash_avr_v+4, r4
    sts siphash_avr_v+5, r5
    sts siphash_avr_v+6, r6
    sts siphash_avr_v+7, r7
    sts siphash_avr_v+8, r8
    sts siphash_avr_v+9, r9
    sts siphash_avr_v+10, r10
    sts siphash_avr_v+11, r11
    sts siphash_avr_v+12, r12
    sts siphash_avr_v+13, r13
    sts siphash_avr_v+14, r14
    sts siphash_avr_v+15, r15
    sts siphash_avr_v+16, r16
    sts siphash_avr_v+17, r17
    sts siphash_avr_v+18, r18
    sts siphash_avr_v+19, r19
    sts siphash_avr_v+20, r20
    sts siphash_avr_v+21, r21
    sts siphash_avr_v+22, r22
    sts siphash_avr_v+23, r23
    sts siphash_avr_v+24, r28
    sts siphash_avr_v+25, r29
    sts siphash_avr_v+26, r30
    sts siphash_avr_v+27, r31
    sts siphash_avr_v+28, r24
    sts siphash_avr_v+29, r25
    sts siphash_avr_v+30, r26
    sts siphash_avr_v+31, r27
    clr r1
    pop r29
    pop r28
    pop r17
    pop r16
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop r7
    pop r6
    pop r5
    pop r4
    pop r3
    pop r2
    ret
.size siphash_avr_rounds4, .-siphash_avr_rounds4

#endif
