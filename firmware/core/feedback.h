/*
 * Analog position feedback: a servo potentiometer's wiper on an ADC input (channel k on
 * ADCk), low-pass filtered on the MCU clock, converted to a joint angle by a
 * per-channel two-point calibration (PROTOCOL.md, "Feedback"). Angles in centidegrees.
 */
#ifndef FEEDBACK_H
#define FEEDBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "servo.h"

#define FEEDBACK_ADC_MAX 1023u      /* 10-bit conversions */
#define FEEDBACK_PERIOD_US 1000u    /* one filter step per millisecond */
#define FEEDBACK_SHIFT 2u           /* filter gain 1/4 per step: time constant 3.5 ms */
#define FEEDBACK_FRAC 5u            /* filtered value in 1/32 of an ADC count */

typedef struct {
    uint16_t adc_lo;      /* ADC reading [counts] at angle_lo_cdeg */
    int16_t angle_lo_cdeg;
    uint16_t adc_hi;      /* ADC reading [counts] at angle_hi_cdeg, > adc_lo */
    int16_t angle_hi_cdeg;
} feedback_cal_t;

/* Every channel without feedback; no samples. */
void feedback_init(uint32_t now_us);

/* Calibrate a channel's feedback (cal NULL: switch it off). Returns false, changing
 * nothing, for a channel out of range or an inconsistent calibration. */
bool feedback_configure(uint8_t channel, const feedback_cal_t *cal);

/* Channels with feedback configured (bit i: channel i), what the ADC must sample. */
uint16_t feedback_channels(void);

/* Once per FEEDBACK_PERIOD_US, step each channel's filter with its latest conversion
 * (hal_adc_take), if a new one arrived. */
void feedback_update(uint32_t now_us);

/* Channels whose angle is measured: feedback configured and sampled since. */
uint16_t feedback_mask(void);

/* Measured joint angle of a channel in feedback_mask. */
int16_t feedback_angle_cdeg(uint8_t channel);

/* Joint angle of a filtered ADC value [1/32 count] under a calibration, clamped to the
 * calibration's angle range (PROTOCOL.md, "Feedback"). */
int16_t feedback_convert(const feedback_cal_t *cal, uint16_t filtered);

#endif
