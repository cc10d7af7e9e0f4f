/* The firmware's main loop: commands in, pulses and telemetry out. Uses only hal.h. */
#ifndef APP_H
#define APP_H

#include <stdint.h>

#include "siphash.h"

/* key: shared 128-bit key for authenticated mode, or NULL for plain frames. */
void app_init(const uint8_t *key);

/* One pass of the main loop. */
void app_step(void);

#endif
