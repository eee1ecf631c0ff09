import { validateVpnGateway } from '../../src';
import { gatewayFor } from '../helpers/fixtures';

/**
 * Each well-known token family is refused as an API token by its shape alone: the bodies here are one letter
 * repeated, which no "long random string" test takes for a token, so only the family's own pattern can refuse them.
 * Each one character shorter than its family's minimum (or, for AWS, than its fixed length) is a control: taken as
 * text, so the length in the pattern is what refuses the first.
 */
const TOKEN = "this looks like an API token, which is never taken inline here (not shown): put it in a Secret and pass the Secret's name (a `…Secret` prop), never the value";

function problemsFor(value: string) {
  return validateVpnGateway({ ...gatewayFor('nordvpn'), serverCountries: [value] });
}

describe('API tokens by their family\'s shape', () => {
  it.each([
    ['GitHub classic (ghp_, 20 or more)', 'ghp_', 'a', 20],
    ['GitHub OAuth (gho_)', 'gho_', 'a', 20],
    ['GitHub fine-grained (github_pat_, 20 or more)', 'github_pat_', 'a', 20],
    ['GitLab (glpat-, 16 or more)', 'glpat-', 'a', 16],
    ['Slack bot (xoxb-, 10 or more)', 'xoxb-', 'a', 10],
    ['Slack user (xoxp-)', 'xoxp-', 'a', 10],
    ['OpenAI-style (sk-, 16 or more)', 'sk-', 'a', 16],
    ['Stripe live (sk_live_, 16 or more)', 'sk_live_', 'a', 16],
    ['Stripe test (sk_test_)', 'sk_test_', 'a', 16],
    ['AWS access key id (AKIA, then 16 of [0-9A-Z])', 'AKIA', 'A', 16],
    ['Vault service (hvs., 20 or more)', 'hvs.', 'a', 20],
    ['Vault batch (hvb.)', 'hvb.', 'a', 20],
    ['npm (npm_, 30 or more)', 'npm_', 'a', 30],
    ['Google API key (AIza, 30 or more)', 'AIza', 'a', 30],
  ])('%s: refused at its length, taken one shorter', (_family, prefix, letter, length) => {
    const value = prefix + letter.repeat(length);
    expect(problemsFor(value)).toEqual([{ path: 'serverCountries[0]', code: 'secret-value', message: TOKEN }]);
    expect(problemsFor(prefix + letter.repeat(length - 1))).toEqual([]);
  });

  it.each([
    ['a GitLab token with dashes in its body', `glpat-${'a-'.repeat(8)}`],
    ['a Slack token with dashes in its body', `xoxb-${'1234-'.repeat(2)}aa`],
    ['an OpenAI-style token with dashes in its body', `sk-proj-${'a'.repeat(12)}`],
    ['a Vault token with dashes in its body', `hvs.${'a-'.repeat(10)}`],
    ['a Google API key with dashes in its body', `AIza${'a-'.repeat(15)}`],
  ])('%s is refused as a token', (_what, value) => {
    expect(problemsFor(value)).toEqual([{ path: 'serverCountries[0]', code: 'secret-value', message: TOKEN }]);
  });

  it.each([
    ['an AWS key id with lower-case letters (its 16 are [0-9A-Z])', `AKIA${'a'.repeat(16)}`],
    ['an AWS key id one longer than 16', `AKIA${'A'.repeat(17)}`],
    ['a token prefix not at the start', `x-ghp_${'a'.repeat(20)}`],
    ['a Vault prefix of another type', `hvx.${'a'.repeat(20)}`],
  ])('control: %s is text', (_what, value) => {
    expect(problemsFor(value)).toEqual([]);
  });
});
