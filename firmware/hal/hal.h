/*
 * The only hardware surface of the firmware. core/ calls these; hal/avr and hal/posix
 * implement them. Times in microseconds, pulse widths in microseconds.
 */
#ifndef HAL_H
#define HAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void hal_init(void);

/* This boot's id: a counter kept across resets, +1 per boot, never 0 (PROTOCOL.md, "Boot id").
 * Valid after hal_init. */
uint32_t hal_boot_id(void);

/* Free-running microsecond clock; wraps after 2^32 us (71 minutes). */
uint32_t hal_micros(void);

/* The hardware servo channels' pulses start at whole multiples of this on hal_micros, one
 * group of channels at each in turn (hal/avr: the four PWM timers, 5 ms apart), until the
 * clock wraps; the core updates the widths just before each. */
#define HAL_PULSE_SLOT_US 5000u

/* Copy up to max received bytes into buf; returns how many (0 if none, never blocks). */
size_t hal_uart_read(uint8_t *buf, size_t max);

/* Queue len bytes for sending, all or nothing; false if there is no room. */
bool hal_uart_write(const uint8_t *data, size_t len);

/* Bytes hal_uart_write can take now. */
size_t hal_uart_tx_free(void);

/* Received bytes lost because the receive buffer was full. */
uint16_t hal_uart_rx_dropped(void);

/* Pulse width of a servo channel from its next period on. 0 stops its pulses: a pulse
 * already running ends at its natural end (no runt pulse), and no new one starts. */
void hal_servo_write(uint8_t channel, uint16_t pulse_us);

/* E-stop: every servo output low at once, running pulses cut; no pulses until the next
 * hal_servo_write with a width. */
void hal_servo_cut(void);

/* ADC: convert the inputs of the channels in mask (bit k: channel k on ADCk) one after the
 * other, continuously, by interrupt; 0 stops. Their pins become analog inputs. */
void hal_adc_select(uint16_t mask);

/* The latest conversion of a channel's input [counts of 1/1024 of the reference] in *value;
 * false (value untouched) if none arrived since the previous take. */
bool hal_adc_take(uint8_t channel, uint16_t *value);

/* Kick the hardware watchdog: called once at the end of every main-loop pass, whose work is
 * bounded well below the watchdog's period. */
void hal_kick(void);

/* Called once per main-loop pass, after hal_kick: finish what hal_servo_write left pending
 * (a channel to stop once its pulse is over), then wait (briefly) for input or a timer
 * tick. */
void hal_idle(void);

#endif
