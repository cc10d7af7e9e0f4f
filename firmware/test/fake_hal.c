#include "fake_hal.h"

#include <string.h>

#include "../hal/hal.h"

uint32_t fake_now_us;
uint32_t fake_boot_id;
uint16_t fake_pulse_us[SERVO_CHANNELS];
uint8_t fake_tx[4096];
size_t fake_tx_len;
size_t fake_tx_room;
int fake_cuts;
int fake_kicks;
uint16_t fake_adc[SERVO_CHANNELS];
uint16_t fake_adc_mask;
static uint8_t rx[4096];
static size_t rx_len, rx_pos;

void fake_reset(void)
{
    fake_now_us = 1000000u;
    fake_boot_id = 1;
    memset(fake_pulse_us, 0xff, sizeof fake_pulse_us);
    fake_tx_len = 0;
    fake_tx_room = sizeof fake_tx;
    fake_cuts = 0;
    fake_kicks = 0;
    memset(fake_adc, 0, sizeof fake_adc);
    fake_adc_mask = 0;
    rx_len = rx_pos = 0;
}

void fake_rx(const uint8_t *data, size_t len)
{
    if (rx_pos == rx_len) {
        rx_pos = rx_len = 0;
    }
    memcpy(rx + rx_len, data, len);
    rx_len += len;
}

size_t fake_rx_pending(void)
{
    return rx_len - rx_pos;
}

void hal_init(void)
{
}

uint32_t hal_boot_id(void)
{
    return fake_boot_id;
}

uint32_t hal_micros(void)
{
    return fake_now_us;
}

size_t hal_uart_read(uint8_t *buf, size_t max)
{
    size_t n = rx_len - rx_pos < max ? rx_len - rx_pos : max;
    memcpy(buf, rx + rx_pos, n);
    rx_pos += n;
    return n;
}

size_t hal_uart_tx_free(void)
{
    return fake_tx_room - fake_tx_len;
}

bool hal_uart_write(const uint8_t *data, size_t len)
{
    if (len > hal_uart_tx_free()) {
        return false;
    }
    memcpy(fake_tx + fake_tx_len, data, len);
    fake_tx_len += len;
    return true;
}

uint16_t hal_uart_rx_dropped(void)
{
    return 0;
}

void hal_servo_write(uint8_t channel, uint16_t pulse_us)
{
    fake_pulse_us[channel] = pulse_us;
}

void hal_servo_cut(void)
{
    fake_cuts++;
    memset(fake_pulse_us, 0, sizeof fake_pulse_us);
}

void hal_kick(void)
{
    fake_kicks++;
}

void hal_idle(void)
{
}

void hal_adc_select(uint16_t mask)
{
    fake_adc_mask = mask;
}

bool hal_adc_take(uint8_t channel, uint16_t *value)
{
    if (!(fake_adc_mask & (1u << channel))) {
        return false;
    }
    *value = fake_adc[channel];
    return true;
}
