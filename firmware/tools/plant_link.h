/*
 * plant_link: the simavr runner's lock-step exchange with a physical plant process (the servos
 * and the snake's body, snake_bringup/plant_bridge.py) over an inherited stream socket.
 *
 * The 16 servo pins (channels 0-11: PB5-7, PE3-5, PH3-5, PL3-5; 12-15: PA0-3, as in
 * hal/avr/hal_avr.c) are watched through their pin IRQs; each channel's latest complete high
 * time is measured in CPU cycles. Every PLANT_PERIOD_US of emulated time the runner sends one
 * record and waits for the reply before the MCU runs on (host byte order, no padding):
 *
 *   runner -> plant, 144 bytes: uint64 tick (ticks since start, one per period),
 *     uint32 period_us, uint32 freq_hz, uint32 width[16] (the channel's latest complete pulse
 *     [cycles], 0: none yet), uint32 age[16] (cycles since that pulse ended, UINT32_MAX: none,
 *     or too long ago to count).
 *   plant -> runner, 32 bytes: uint16 millivolts[16], the potentiometer voltages to raise on
 *     ADC0-15 (0xFFFF: leave that input alone). simavr 1.6 keeps only ADC0-7, so the values
 *     of channels 8-15 are ignored: those channels have no emulated feedback.
 *
 * A plant that closes the socket or answers short stops the emulation (the runner ends).
 */
#ifndef PLANT_LINK_H
#define PLANT_LINK_H

#include <sim_avr.h>

/* One exchange per 4 ms of emulated time. Each is a round trip between two processes, and
 * on a busy 2-core machine the wakeups, not the work, set the pace: at one per millisecond
 * the emulation fell 0.1-1.2 s behind real time beside the demo's graph, at one per 4 ms
 * 0.06-0.16 s (bench/README.md, "The emulated robot's real time"). No timing is lost:
 * every pulse carries its end time (age) and its target acts a dead time after it, the
 * plant computes each period ahead when every dead time is at least a period (in turn
 * otherwise), and the pose sensor samples at its own times. The potentiometer voltages
 * and a servo's switching on or off go by whole periods. */
#define PLANT_PERIOD_US 4000u
#define PLANT_CHANNELS 16u
#define PLANT_ADC_INPUTS 8u /* ADC0-7: the inputs simavr 1.6 emulates */

/* Watch the servo pins and start the periodic exchange over fd. Returns 0, or -1 after
 * printing why (an unknown port). */
int plant_link_attach(avr_t *avr, int fd);

/* After an MCU reset (avr_reset clears cycle timers and pin states): restart the tick and
 * forget the pulses in progress. */
void plant_link_reset(avr_t *avr);

/* Exchanges made so far. */
unsigned long long plant_link_ticks(void);

#endif
