#!/bin/sh
# The gateway's gluetun-auth init container, written by tunnelwright: writes gluetun's control-server auth file from
# the API key Secret (a TOML file cannot read a Secret itself): one role, the API key, the routes its reader calls
# (internal/server/middlewares/auth/settings.go:111-126 at v3.41.1). Refuses a key that would break out of the TOML
# string. The file goes to a memory emptyDir, readable by its owner only.
set -eu
key=$(cat /run/control-api-key/api-key)
case "$key" in "" | *[!A-Za-z0-9._~+/=-]*) echo "the control API key must be 1 or more of A-Z a-z 0-9 . _ ~ + / = -" >&2; exit 1 ;; esac
umask 077; printf '[[roles]]\nname = "@ROLE@"\nroutes = [@ROUTES@]\nauth = "apikey"\napikey = "%s"\n' "$key" > /run/gluetun-auth/config.toml
