/*
 * Host build of the firmware: snake_fw_posix [--key-file FILE] [--seconds S]
 * Serves the protocol on a pseudo-terminal whose path it prints ("PTY <path>").
 * FILE holds the key's 32 hex digits and is its owner's alone (chmod 600): a key on the
 * command line would be visible to every user (ps).
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The key in the file at path (whitespace around it ignored); -1 with a one-line reason. */
static int read_key_file(const char *path, uint8_t key[SIPHASH_KEY_LEN])
{
    char text[128];
    struct stat st;
    int fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if (st.st_mode & 077) {
        fprintf(stderr, "key file %s is open to other users (mode %04o): chmod 600 %s\n", path,
                (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    size_t len = n > 0 ? (size_t)n : 0;
    while (len > 0 && isspace((unsigned char)text[len - 1])) {
        len--;
    }
    text[len] = 0;
    const char *start = text;
    while (isspace((unsigned char)*start)) {
        start++;
    }
    if (parse_key(start, key) != 0) {
        fprintf(stderr, "key file %s: the key must be 32 hex digits (128 bits)\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t key[SIPHASH_KEY_LEN];
    const uint8_t *key_ptr = NULL;
    double seconds = 0.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--key-file") && i + 1 < argc) {
            if (read_key_file(argv[++i], key) != 0) {
                return 2;
            }
            key_ptr = key;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = strtod(argv[++i], NULL);
        } else {
            fprintf(stderr, "usage: %s [--key-file FILE] [--seconds S]\n", argv[0]);
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
