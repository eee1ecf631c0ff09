#!/bin/sh
# The gateway's gluetun-auth init container, written by tunnelwright: writes gluetun's control-server auth file from
# the API key Secret (a TOML file cannot read a Secret itself): one role, the API key, the routes its reader calls
# (internal/server/middlewares/auth/settings.go:111-126 at v3.41.1). Refuses a key that would break out of the TOML
# string. The file goes to a memory emptyDir, readable by its owner only.
#   AUTH_ROLE    the role's name (port-sync, slskd)
#   AUTH_ROUTES  the routes it grants, comma-separated ("GET /v1/publicip/ip,GET /v1/portforward")
set -eu
key=$(cat /run/control-api-key/api-key)
case "$key" in "" | *[!A-Za-z0-9._~+/=-]*) echo "the control API key must be 1 or more of A-Z a-z 0-9 . _ ~ + / = -" >&2; exit 1 ;; esac
routes=$(printf '%s\n' "$AUTH_ROUTES" | sed 's/[^,][^,]*/"&"/g; s/,/, /g')
umask 077; printf '[[roles]]\nname = "%s"\nroutes = [%s]\nauth = "apikey"\napikey = "%s"\n' "$AUTH_ROLE" "$routes" "$key" > /run/gluetun-auth/config.toml
