/* ATmega2560 entry point. Build with AUTH_KEY_FILE=<file> for authenticated mode: the
 * Makefile writes the key to a 0600 auth_key.h (AUTH_KEY_BYTES) and defines AUTH_KEY_HEADER. */
#include <stddef.h>

#include "../../core/app.h"
#include "../hal.h"

#ifdef AUTH_KEY_HEADER
#include "auth_key.h"
#endif

#ifdef AUTH_KEY_BYTES
static const uint8_t auth_key[SIPHASH_KEY_LEN] = {AUTH_KEY_BYTES};
#define KEY auth_key
#else
#define KEY NULL
#endif

int main(void)
{
    hal_init();
    app_init(KEY);
    for (;;) {
        app_step();
    }
}
