/**
 * Server filters against gluetun's server list: the table made by scripts/gluetun-server-filters.mjs (run here on a
 * small servers.json in gluetun's format, internal/models/server.go field names) and the check that reads it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { validateVpnGateway } from '../../src';
import { serverFilterFindings, SERVER_FILTERS, ServerFilterTable } from '../../src/model/server-filters';
import { gatewayFor } from '../helpers/fixtures';
import { run, tmpdir } from '../system/tools';

const servers = {
  version: 1,
  protonvpn: {
    version: 4, timestamp: 1,
    servers: [
      { vpn: 'wireguard', country: 'Switzerland', city: 'Zurich', server_name: 'CH#1', hostname: 'node-ch-01.protonvpn.net', ips: ['203.0.113.1'] },
      { vpn: 'wireguard', country: 'switzerland', city: 'Geneva', server_name: 'CH#2', hostname: 'node-ch-02.protonvpn.net' },
      { vpn: 'openvpn', country: 'Iceland', city: 'Reykjavik', server_name: 'IS#1', hostname: 'node-is-01.protonvpn.net', udp: true },
      { country: 'Netherlands', city: 'Amsterdam', server_name: 'NL#1', hostname: 'node-nl-01.protonvpn.net', tcp: true },
    ],
  },
  cyberghost: { version: 4, timestamp: 1, servers: [{ country: 'Albania', hostname: 'x' }] },
};

function generate(): { table: ServerFilterTable; stdout: string } {
  const dir = tmpdir('tw-filters-');
  fs.writeFileSync(path.join(dir, 'servers.json'), JSON.stringify(servers));
  const r = run('node', [path.resolve(__dirname, '../../scripts/gluetun-server-filters.mjs'), path.join(dir, 'servers.json'), 'v3.41.1', path.join(dir, 'out.json')]);
  expect(r.status).toBe(0);
  return { table: JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8')) as ServerFilterTable, stdout: r.stdout };
}

describe('the server-filter table, generated', () => {
  const { table, stdout } = generate();
  it('keeps only the filters\' fields, per provider tunnelwright offers and VPN type, each value once (case-insensitively), and states the gluetun version', () => {
    expect(table).toEqual({
      gluetun: 'v3.41.1', source: 'internal/storage/servers.json',
      providers: {
        protonvpn: {
          openvpn: { serverCountries: ['Iceland', 'Netherlands'], serverCities: ['Amsterdam', 'Reykjavik'], serverNames: ['IS#1', 'NL#1'], serverHostnames: ['node-is-01.protonvpn.net', 'node-nl-01.protonvpn.net'] },
          wireguard: { serverCountries: ['Switzerland'], serverCities: ['Geneva', 'Zurich'], serverNames: ['CH#1', 'CH#2'], serverHostnames: ['node-ch-01.protonvpn.net', 'node-ch-02.protonvpn.net'] },
        },
      },
    });
    expect(stdout).toMatch(/bytes, gluetun v3\.41\.1\n$/);
  });

  const proton = (p: Record<string, unknown>) => ({ ...gatewayFor('protonvpn'), serverCountries: undefined, ...p }) as unknown as Record<string, unknown>;
  it.each<[string, Record<string, unknown>, { path: string; message: string }[]]>([
    ['a known country, any case', { serverCountries: ['SWITZERLAND'] }, []],
    ['a typo', { serverCountries: ['Swizterland'] }, [{ path: 'serverCountries[0]', message: '"Swizterland" is no country of protonvpn over wireguard in gluetun v3.41.1\'s server list: did you mean "Switzerland"? (gluetun exits at start when it knows none of a filter\'s values, so the gateway would crash-loop, and skips the ones it does not know)' }]],
    ['a country with OpenVPN servers only, over WireGuard', { serverCountries: ['Switzerland', 'Iceland'] }, [{ path: 'serverCountries[1]', message: '"Iceland" is no country of protonvpn over wireguard in gluetun v3.41.1\'s server list: it has openvpn servers only (gluetun exits at start when it knows none of a filter\'s values, so the gateway would crash-loop, and skips the ones it does not know)' }]],
    ['a city nowhere near any', { serverCities: ['Timbuktu'] }, [{ path: 'serverCities[0]', message: '"Timbuktu" is no city of protonvpn over wireguard in gluetun v3.41.1\'s server list (gluetun exits at start when it knows none of a filter\'s values, so the gateway would crash-loop, and skips the ones it does not know)' }]],
    ['over OpenVPN, Iceland is known', { vpnType: 'openvpn', serverCountries: ['Iceland'] }, []],
  ])('%s', (_n, p, expected) => {
    const f = serverFilterFindings(proton(p), true, table);
    expect(f.problems.map(({ path: at, message }) => ({ path: at, message }))).toEqual(expected);
    expect(f.warnings).toEqual([]);
    // Another gluetun image: the same findings as warnings, saying why.
    const w = serverFilterFindings(proton(p), false, table);
    expect(w.problems).toEqual([]);
    expect(w.warnings.map((x) => x.message)).toEqual(expected.map((e) => `${e.message}; your images.gluetun may know newer servers, so this is only a warning`));
  });

  it('a provider the table does not hold is not checked (custom, or a table without it)', () => {
    expect(serverFilterFindings({ ...gatewayFor('custom') } as unknown as Record<string, unknown>, true, table)).toEqual({ problems: [], warnings: [] });
    expect(serverFilterFindings(proton({ serverCountries: ['Atlantis'] }), true, { gluetun: 'v3.41.1', providers: {} })).toEqual({ problems: [], warnings: [] });
  });
});

describe('the table the library ships', () => {
  it('states the gluetun version the library pins', () => {
    expect(SERVER_FILTERS.gluetun).toBe('v3.41.1');
    expect(validateVpnGateway(gatewayFor('protonvpn'))).toEqual([]);
  });
});
