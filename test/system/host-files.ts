import * as fs from 'node:fs';
import * as path from 'node:path';
import { HostPlan } from '../../src';
import { dropinPath, unitPath } from '../../src/host/host-plan';
import { run, Run, sh } from './tools';

/** Writes a host plan's files, units and drop-ins under `root`. */
export function writeHostPlan(root: string, plan: HostPlan): void {
  const put = (p: string, content: string, mode: number) => {
    const full = path.join(root, p);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content, { mode });
    fs.chmodSync(full, mode);
  };
  for (const f of plan.files) put(f.path, f.content, f.mode);
  for (const u of plan.units) if (u.content !== undefined) put(unitPath(u.name), u.content, 0o644);
  for (const d of plan.dropins) put(dropinPath(d.unit, d.name), d.content, 0o644);
}

const UNIT_DIRS = ['/etc/systemd/system', '/usr/lib/systemd/system', '/lib/systemd/system'];

/**
 * `systemd-analyze verify` of every unit a plan writes or extends, in a temporary root that holds the host's own
 * units, the plan's files, and stubs of the units and binaries the plan names but does not ship (the
 * distribution's units, wg-quick). Any output is a failure: systemd warns and still exits 0 on unknown keys.
 */
export function verifyUnits(root: string, plan: HostPlan): Run {
  fs.mkdirSync(path.join(root, 'usr/lib/systemd'), { recursive: true });
  if (!fs.existsSync(path.join(root, 'usr/lib/systemd/system'))) {
    sh(`cp -r /lib/systemd/system ${root}/usr/lib/systemd/system`);
  }
  writeHostPlan(root, plan);
  const names = new Set<string>([...plan.units.map((u) => u.name), ...plan.dropins.map((d) => d.unit)]);
  const texts = [...plan.units.map((u) => u.content ?? ''), ...plan.dropins.map((d) => d.content)];
  const exists = (unit: string) => {
    const template = unit.replace(/@[^.]+\./, '@.');
    return UNIT_DIRS.some((d) => fs.existsSync(path.join(root, d, unit)) || fs.existsSync(path.join(root, d, template)));
  };
  // Units named in ordering and dependencies that the OS or the distribution provides.
  for (const text of texts) {
    for (const m of text.matchAll(/^(?:After|Before|Requires|Wants|BindsTo|PartOf)=(.+)$/gm)) {
      for (const u of m[1].split(/\s+/)) names.add(u);
    }
  }
  for (const u of names) {
    if (!exists(u)) {
      const stub = path.join(root, 'etc/systemd/system', u.replace(/@[^.]+\./, '@.'));
      fs.mkdirSync(path.dirname(stub), { recursive: true });
      fs.writeFileSync(stub, `[Unit]\nDescription=stub of ${u}\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n`);
    }
  }
  // Binaries the units run, stubbed where the root lacks them (the plan's own scripts are real files).
  const unitTexts = fs.readdirSync(path.join(root, 'usr/lib/systemd/system')).filter((f) => /^wg-quick/.test(f)).map((f) => fs.readFileSync(path.join(root, 'usr/lib/systemd/system', f), 'utf8'));
  for (const text of [...texts, ...unitTexts, ...fs.readdirSync(path.join(root, 'etc/systemd/system')).filter((f) => f.endsWith('.service')).map((f) => fs.readFileSync(path.join(root, 'etc/systemd/system', f), 'utf8'))]) {
    for (const m of text.matchAll(/^Exec[A-Za-z]*=[-@:+!]*(\/\S+)/gm)) {
      const bin = path.join(root, m[1]);
      if (!fs.existsSync(bin)) {
        fs.mkdirSync(path.dirname(bin), { recursive: true });
        fs.writeFileSync(bin, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      }
    }
  }
  return run('systemd-analyze', ['verify', `--root=${root}`, ...[...names].filter((n) => plan.units.some((u) => u.name === n) || plan.dropins.some((d) => d.unit === n))]);
}
