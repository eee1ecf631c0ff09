import * as fs from 'node:fs';
import * as path from 'node:path';
import { MIN_SLSKD } from '../src/model/vpn-gateway';

/** The image tags the VpnGateway guide pins must be ones that have what it says the library relies on. */
const GUIDE = fs.readFileSync(path.resolve(__dirname, '..', 'docs', 'vpn-gateway.md'), 'utf8');
const cmp = (a: string, b: string): number => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
};

describe('the VpnGateway guide\'s pinned images', () => {
  const slskd = [...GUIDE.matchAll(/slskd\/slskd:(\d+\.\d+\.\d+)/g)].map((m) => m[1]);

  it('pins slskd somewhere', () => expect(slskd.length).toBeGreaterThan(0));

  it.each(slskd.map((v) => [v]))('slskd %s has the SLSKD_VPN_* integration (>= MIN_SLSKD)', (v) => {
    expect(cmp(v, MIN_SLSKD)).toBeGreaterThanOrEqual(0);
  });

  it('MIN_SLSKD is the first tag with the VPN integration', () => expect(MIN_SLSKD).toBe('0.24.4'));
});
