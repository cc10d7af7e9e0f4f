/* A scripted hal.h for unit tests: settable clock, captured output. */
#ifndef FAKE_HAL_H
#define FAKE_HAL_H

#include <stddef.h>
#include <stdint.h>

#include "../core/servo.h"

extern uint32_t fake_now_us;
extern uint32_t fake_boot_id; /* what hal_boot_id returns (fake_reset: 1) */
extern uint16_t fake_pulse_us[SERVO_CHANNELS];
extern uint8_t fake_tx[4096];
extern size_t fake_tx_len;
extern size_t fake_tx_room; /* transmit buffer size seen by the core (fake_reset: 4096) */
extern int fake_cuts;       /* hal_servo_cut calls */
extern int fake_kicks;      /* hal_kick calls */
extern uint16_t fake_adc[SERVO_CHANNELS]; /* each hal_adc_take: a new conversion of this */
extern uint16_t fake_adc_mask;            /* the latest hal_adc_select */

void fake_reset(void);
void fake_rx(const uint8_t *data, size_t len); /* bytes the next hal_uart_read returns */
size_t fake_rx_pending(void);                   /* bytes not read yet */

#endif
