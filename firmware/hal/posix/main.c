/*
 * Host build of the firmware: snake_fw_posix [--key HEX32] [--seconds S]
 * Serves the protocol on a pseudo-terminal whose path it prints ("PTY <path>").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/app.h"
#include "../hal.h"
#include "hal_posix.h"

static int parse_key(const char *hex, uint8_t key[SIPHASH_KEY_LEN])
{
    if (strlen(hex) != 2 * SIPHASH_KEY_LEN) {
        return -1;
    }
    for (size_t i = 0; i < SIPHASH_KEY_LEN; i++) {
        char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
        char *end;
        key[i] = (uint8_t)strtoul(byte, &end, 16);
        if (*end != 0) {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t key[SIPHASH_KEY_LEN];
    const uint8_t *key_ptr = NULL;
    double seconds = 0.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--key") && i + 1 < argc && parse_key(argv[i + 1], key) == 0) {
            key_ptr = key;
            i++;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = strtod(argv[++i], NULL);
        } else {
            fprintf(stderr, "usage: %s [--key HEX32] [--seconds S]\n", argv[0]);
            return 2;
        }
    }
    if (hal_posix_open_pty() < 0) {
        perror("pty");
        return 1;
    }
    hal_init();
    app_init(key_ptr);
    while (seconds <= 0.0 || hal_micros() < (uint32_t)(seconds * 1e6)) {
        app_step();
    }
    return 0;
}
