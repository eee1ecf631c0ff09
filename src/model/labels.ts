import { createHash } from 'node:crypto';
import { Problem } from '../errors';
import * as commonModel from './common';

const LABEL_NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
/** A DNS-1123 subdomain's syntax (its length is checked apart: `isDnsSubdomain`). */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Kubernetes label key syntax: `[prefix/]name`, prefix a DNS subdomain ≤ 253, name ≤ 63. */
export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return false;
  return name.length > 0 && name.length <= 63 && LABEL_NAME.test(name);
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

/** A DNS-1123 subdomain (object names, node names, host names ≤ 253). */
export function isDnsSubdomain(text: string): boolean {
  return text.length <= 253 && DNS_SUBDOMAIN.test(text);
}

/** A DNS-1123 label (namespace names, object names ≤ 63). */
export function isDnsLabel(text: string): boolean {
  return text.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(text);
}

/**
 * `base` then `suffix` as an object name of at most 63 characters. A longer one keeps the start of `base`, then 8 hex
 * digits of the SHA-256 of the whole `base`, then `suffix`: two long names that share their first characters still get
 * two objects, where a plain cut would give one name to both, and the second would replace the first.
 */
export function boundedName(base: string, suffix: string): string {
  const whole = `${base}${suffix}`;
  if (whole.length <= 63) return whole;
  const hash = createHash('sha256').update(base).digest('hex').slice(0, 8);
  return `${base.slice(0, 63 - suffix.length - hash.length - 1).replace(/[-.]+$/, '')}-${hash}${suffix}`;
}

/** Problems of a label map used as a selector: syntax, and never empty (an empty selector selects everything). */
export function checkSelector(selector: unknown, path: string, problems: Problem[]): void {
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) return;
  const entries = Object.entries(selector as Record<string, unknown>);
  if (entries.length === 0) {
    problems.push({ path, code: 'selector-empty', message: 'expected at least one label: an empty selector selects every pod' });
  }
  for (const [k, v] of entries) {
    if (!isLabelKey(k)) problems.push({ path: `${path}[${JSON.stringify(k)}]`, code: 'label-key', message: `expected a label key ([prefix/]name, name ≤ 63 characters), ${commonModel.received(k)}` });
    else if (typeof v === 'string' && !isLabelValue(v)) problems.push({ path: `${path}[${JSON.stringify(k)}]`, code: 'label-value', message: `expected a label value (≤ 63 characters of [-A-Za-z0-9_.], alphanumeric at both ends), ${commonModel.received(v)}: it would select nothing` });
  }
}
