import { KillSwitchProps, Problem, validateKillSwitch } from '../../src';
import { qbittorrentKillSwitch } from '../helpers/fixtures';
import { Mutable, mutated } from '../helpers/mutable';
import { shown } from '../helpers/shown';

/**
 * Label keys, label values and namespace names at their edges, as the API server takes them (apimachinery's
 * validation: a key is `[prefix/]name`, the prefix a DNS subdomain ≤ 253, the name ≤ 63 of [-A-Za-z0-9_.] with an
 * alphanumeric at both ends; a value the same or empty; a namespace a DNS label ≤ 63). A selector the API server
 * would refuse, or one no pod can match, is refused at synth with its path.
 */
type Props = Mutable<KillSwitchProps>;
const withSelector = (selector: unknown) => mutated(qbittorrentKillSwitch(), (p) => { (p as { selector: unknown }).selector = selector; });
const withNamespace = (namespace: string) => mutated(qbittorrentKillSwitch(), (p: Props) => { p.namespace = namespace; });

const KEY_MESSAGE = 'expected a label key ([prefix/]name, name ≤ 63 characters)';
const VALUE_MESSAGE = 'expected a label value (≤ 63 characters of [-A-Za-z0-9_.], alphanumeric at both ends)';
const badKey = (key: string): Problem[] => [{ path: `selector[${JSON.stringify(key)}]`, code: 'label-key', message: `${KEY_MESSAGE}, received ${shown(key)}` }];
const badValue = (key: string, value: string): Problem[] => [{ path: `selector[${JSON.stringify(key)}]`, code: 'label-value', message: `${VALUE_MESSAGE}, received ${shown(value)}: it would select nothing` }];
const badNamespace = (ns: string): Problem[] => [{ path: 'namespace', code: 'namespace', message: `expected a namespace name (a DNS label), received ${shown(ns)}` }];

const PREFIX_253 = `${'p'.repeat(63)}.${'q'.repeat(63)}.${'r'.repeat(63)}.${'s'.repeat(61)}`;

describe('label keys in a selector', () => {
  it.each<[string, string, Problem[]]>([
    ['a name alone, with capitals', 'App', []],
    ['a one-character name', 'a', []],
    ['a prefixed name', 'app.kubernetes.io/name', []],
    ['a 63-character name', 'n'.repeat(63), []],
    ['a 64-character name', 'n'.repeat(64), badKey('n'.repeat(64))],
    ['a 253-character prefix', `${PREFIX_253}/name`, []],
    ['a 254-character prefix', `${PREFIX_253}s/name`, badKey(`${PREFIX_253}s/name`)],
    ['an empty prefix', '/name', badKey('/name')],
    ['an empty name', 'example.com/', badKey('example.com/')],
    ['a prefix with capitals', 'Example.com/name', badKey('Example.com/name')],
    ['a name ending in a dash', 'name-', badKey('name-')],
  ])('%s', (_n, key, expected) => {
    expect(validateKillSwitch(withSelector({ [key]: 'x' }))).toEqual(expected);
  });
});

describe('label values in a selector', () => {
  it.each<[string, string, Problem[]]>([
    ['a 63-character value', 'v'.repeat(63), []],
    ['a 64-character value', 'v'.repeat(64), badValue('app', 'v'.repeat(64))],
    ['a one-character value', 'v', []],
    ['a value ending in a dot', 'v.', badValue('app', 'v.')],
  ])('%s', (_n, value, expected) => {
    expect(validateKillSwitch(withSelector({ app: value }))).toEqual(expected);
  });

  it.each<[string, unknown, string]>([
    ['a string: not one problem per character', 'app', 'string'],
    ['a number: not an empty selector as well', 5, 'number'],
    ['null: a refusal, not a crash', null, 'null'],
  ])('a selector that is not a map, %s, gets its type problem alone', (_n, selector, type) => {
    expect(validateKillSwitch(withSelector(selector))).toEqual([{ path: 'selector', code: 'type', message: `expected record, received ${type}` }]);
  });
});

describe('namespace names', () => {
  it.each<[string, string, Problem[]]>([
    ['a one-character name', 'a', []],
    ['a 63-character name', 'm'.repeat(63), []],
    ['a 64-character name', 'm'.repeat(64), badNamespace('m'.repeat(64))],
    ['a name ending in a dash', 'media-', badNamespace('media-')],
    ['a name with a dot', 'media.x', badNamespace('media.x')],
  ])('%s', (_n, ns, expected) => {
    expect(validateKillSwitch(withNamespace(ns))).toEqual(expected);
  });
});
