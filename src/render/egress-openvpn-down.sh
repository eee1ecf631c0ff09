#!/bin/sh
# shellcheck disable=SC2154 # RESTEER: the settings block
# tunnelwright: OpenVPN --down. The rule from the tunnel address stays, and with the tunnel's route gone the table's
# blackhole takes its traffic: it never falls through to the main table (and eth0) while the label still points here.
# The kill switch keeps the address too. The hook removes the label: the interface is going.
# @settings
TUNNELWRIGHT_TUNNEL_DOWN=1 "$RESTEER" || true
