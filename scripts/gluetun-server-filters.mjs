#!/usr/bin/env node
/**
 * Generates src/model/gluetun-servers.json, the values each server filter may take per provider and VPN type, from
 * gluetun's own server list (internal/storage/servers.json in qdm12/gluetun at the tag the library pins):
 *
 *   node scripts/gluetun-server-filters.mjs <path to servers.json> <gluetun tag, e.g. v3.41.1> [out]
 *
 * Only what the filters read (gluetun internal/storage/filter.go: country, region, city, server_name, hostname),
 * only the providers tunnelwright offers, each list deduplicated case-insensitively (gluetun compares with
 * strings.EqualFold, configuration/settings/serverselection.go atLeastOneIsOneOfCaseInsensitive) and sorted. A server
 * without a "vpn" field is an OpenVPN server (models.Server.VPN, filter.go). Fails when the output passes 1 MB.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** gluetun's provider keys in servers.json, for the providers tunnelwright offers (src/model/vpn-providers.ts). */
export const PROVIDERS = ['airvpn', 'fastestvpn', 'ivpn', 'mullvad', 'nordvpn', 'private internet access', 'protonvpn', 'surfshark', 'windscribe'];
/** tunnelwright's filter prop → the server field gluetun filters it on. */
export const FIELDS = { serverCountries: 'country', serverRegions: 'region', serverCities: 'city', serverNames: 'server_name', serverHostnames: 'hostname' };
export const LIMIT = 1_000_000;

export function filterTable(servers, version) {
  const providers = {};
  for (const name of PROVIDERS) {
    const list = servers[name]?.servers;
    if (!Array.isArray(list)) continue;
    const byVpn = {};
    for (const s of list) {
      const vpn = s.vpn || 'openvpn';
      const t = (byVpn[vpn] ??= Object.fromEntries(Object.keys(FIELDS).map((k) => [k, new Map()])));
      for (const [prop, field] of Object.entries(FIELDS)) {
        const v = s[field];
        if (typeof v === 'string' && v !== '' && !t[prop].has(v.toLowerCase())) t[prop].set(v.toLowerCase(), v);
      }
    }
    providers[name] = Object.fromEntries(Object.entries(byVpn).sort().map(([vpn, t]) => [vpn, Object.fromEntries(
      Object.entries(t).filter(([, m]) => m.size > 0).map(([prop, m]) => [prop, [...m.values()].sort()]),
    )]));
  }
  return { gluetun: version, source: 'internal/storage/servers.json', providers };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [input, version, out = path.join(ROOT, 'src', 'model', 'gluetun-servers.json')] = process.argv.slice(2);
  if (!input || !/^v\d+\.\d+\.\d+$/.test(version ?? '')) {
    process.stderr.write('usage: node scripts/gluetun-server-filters.mjs <servers.json> <gluetun tag, e.g. v3.41.1> [out]\n');
    process.exit(2);
  }
  const text = `${JSON.stringify(filterTable(JSON.parse(fs.readFileSync(input, 'utf8')), version))}\n`;
  if (text.length > LIMIT) {
    process.stderr.write(`gluetun-server-filters: ${text.length} bytes, over ${LIMIT}: leave hostnames out or split the table\n`);
    process.exit(1);
  }
  fs.writeFileSync(out, text);
  process.stdout.write(`gluetun-server-filters: ${out}, ${text.length} bytes, gluetun ${version}\n`);
}
