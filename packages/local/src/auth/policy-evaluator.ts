/**
 * IAM identity-policy evaluation, our own (it replaces the AGPL
 * @cloud-copilot/iam-simulate; issue 35). It evaluates what the bridge's
 * template holds and refuses, with a PolicyEvaluationError naming the
 * element, anything else: a policy it cannot judge is never silently
 * allowed or denied.
 *
 * Rules, after AWS's IAM User Guide:
 * - "Policy evaluation logic" (reference_policies_evaluation-logic): an
 *   explicit Deny in any statement wins; else an Allow allows; else the
 *   request is implicitly denied.
 * - "IAM JSON policy elements" (reference_policies_elements_action,
 *   _notaction, _resource, _notresource): Action and NotAction are matched
 *   case-insensitively, Resource and NotResource case-sensitively, with the
 *   wildcards `*` (any run of characters) and `?` (any one character).
 * - "Condition operators" (reference_policies_elements_condition_operators)
 *   and "Condition with multiple context keys or values"
 *   (reference_policies_condition-logic-multiple-context-keys-or-values):
 *   operators and keys of a Condition are ANDed, a key's values ORed (NORed
 *   for a negated operator); a key absent from the request makes a condition
 *   false, or true for a negated operator, except with ...IfExists (true) and
 *   Null (which tests presence).
 * - "Single-valued vs. multivalued context keys"
 *   (reference_policies_condition-single-vs-multi-valued-context-keys):
 *   ForAnyValue (some request value matches; false when the key is absent)
 *   and ForAllValues (every request value matches; true when absent).
 *
 * Simplification: a Resource wildcard may span the ARN's colons (AWS keeps a
 * wildcard inside its segment unless it ends the segment); the ARNs the gate
 * builds never differ from a grant's only in a region or account segment.
 */
import type { PolicyDocument } from './credentials.ts';

/** A policy element, or a request, the evaluator does not evaluate: refused, never guessed. */
export class PolicyEvaluationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PolicyEvaluationError';
  }
}

export interface EvaluationRequest {
  action: string;
  resource: string;
  /** Context keys (names case-insensitive, as IAM's are) and their values. */
  context: Readonly<Record<string, string | readonly string[]>>;
}

export type Verdict = 'allowed' | 'explicitly-denied' | 'implicitly-denied';

type Matcher = (value: string) => boolean;

interface CompiledCondition {
  /** Where it is, for error messages: `Condition StringLike s3:prefix in statement 2 of policy 0`. */
  where: string;
  test: (context: ReadonlyMap<string, readonly string[]>) => boolean;
}

interface CompiledStatement {
  deny: boolean;
  action: { not: boolean; match: Matcher };
  resource: { not: boolean; match: Matcher };
  conditions: CompiledCondition[];
}

export interface CompiledPolicies {
  readonly statements: readonly CompiledStatement[];
}

export interface CompileOptions {
  /**
   * The context keys (lower case) the caller supplies whenever they apply to
   * a request. A condition on any other key is refused: the evaluator would
   * otherwise judge it as always absent, silently.
   */
  contextKeys: ReadonlySet<string>;
}

const STATEMENT_ELEMENTS = new Set(['Sid', 'Effect', 'Action', 'NotAction', 'Resource', 'NotResource', 'Condition']);
const POLICY_ELEMENTS = new Set(['Version', 'Id', 'Statement']);
const VERSIONS = new Set(['2012-10-17', '2008-10-17']);

/**
 * `*` any run of characters (newlines, U+2028 and U+2029 too: S3 keys may
 * hold any character, issue 38), `?` any one character; the rest literal.
 */
export function wildcardMatcher(pattern: string, ignoreCase: boolean): Matcher {
  const subject = ignoreCase ? pattern.toLowerCase() : pattern;
  if (subject === '*') return () => true;
  if (!/[*?]/.test(subject)) return ignoreCase ? (value) => value.toLowerCase() === subject : (value) => value === subject;
  const source = subject.replace(/[.+^${}()|[\]\\/]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  // s: `.` matches line terminators too; u: `?` is one code point, not half a surrogate pair.
  const regex = new RegExp(`^${source}$`, 'su');
  return ignoreCase ? (value) => regex.test(value.toLowerCase()) : (value) => regex.test(value);
}

const anyOf = (matchers: Matcher[]): Matcher => (matchers.length === 1 ? matchers[0]! : (value) => matchers.some((match) => match(value)));

/** An ARN's six components, the last holding every colon after the fifth; undefined for a non-ARN. */
function arnParts(value: string): string[] | undefined {
  const parts = value.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return undefined;
  return [...parts.slice(0, 5), parts.slice(5).join(':')];
}

/** ArnEquals and ArnLike: "each of the six colon-delimited components of the ARN is checked separately" (condition operators, ARN). */
function arnMatcher(pattern: string): Matcher {
  const parts = arnParts(pattern);
  if (!parts) return () => false;
  const matchers = parts.map((part) => wildcardMatcher(part, false));
  return (value) => {
    const valueParts = arnParts(value);
    return valueParts !== undefined && matchers.every((match, index) => match(valueParts[index]!));
  };
}

/** The base operators: how one policy value matches one request value, and whether the operator is negated. */
const OPERATORS: Record<string, { matcher: (policyValue: string) => Matcher; negated: boolean }> = {
  StringEquals: { matcher: (p) => (v) => v === p, negated: false },
  StringNotEquals: { matcher: (p) => (v) => v === p, negated: true },
  StringEqualsIgnoreCase: { matcher: (p) => (v) => v.toLowerCase() === p.toLowerCase(), negated: false },
  StringNotEqualsIgnoreCase: { matcher: (p) => (v) => v.toLowerCase() === p.toLowerCase(), negated: true },
  StringLike: { matcher: (p) => wildcardMatcher(p, false), negated: false },
  StringNotLike: { matcher: (p) => wildcardMatcher(p, false), negated: true },
  ArnEquals: { matcher: arnMatcher, negated: false },
  ArnLike: { matcher: arnMatcher, negated: false },
  ArnNotEquals: { matcher: arnMatcher, negated: true },
  ArnNotLike: { matcher: arnMatcher, negated: true },
  Bool: { matcher: (p) => (v) => v.toLowerCase() === p.toLowerCase(), negated: false },
};

function list(value: unknown, where: string): string[] {
  const values = Array.isArray(value) ? value : [value];
  if (values.length === 0) throw new PolicyEvaluationError(`${where} is empty`);
  return values.map((item) => {
    if (typeof item !== 'string') throw new PolicyEvaluationError(`${where} holds ${JSON.stringify(item)}, not a string`);
    // Policy variables (${aws:username}...) are not substituted here: refuse rather than match them literally.
    if (item.includes('${')) throw new PolicyEvaluationError(`${where} uses a policy variable (${item}), which the local evaluator does not substitute`);
    return item;
  });
}

function conditionValues(value: unknown, where: string): string[] {
  const values = Array.isArray(value) ? value : [value];
  // A template may hold true/false or numbers where IAM reads their text.
  return list(
    values.map((item) => (typeof item === 'boolean' || typeof item === 'number' ? String(item) : item)),
    where,
  );
}

function compileCondition(operatorName: string, key: string, value: unknown, statementWhere: string, options: CompileOptions): CompiledCondition {
  const where = `Condition ${operatorName} ${key} in ${statementWhere}`;
  const qualifier = /^(ForAnyValue|ForAllValues):/.exec(operatorName)?.[1];
  const unqualified = qualifier ? operatorName.slice(qualifier.length + 1) : operatorName;
  const ifExists = unqualified.endsWith('IfExists');
  const base = ifExists ? unqualified.slice(0, -'IfExists'.length) : unqualified;
  const keyName = key.toLowerCase();
  // Own keys only: an operator named toString or constructor is not one.
  const operator = base !== 'Null' && Object.hasOwn(OPERATORS, base) ? OPERATORS[base] : undefined;
  if ((base !== 'Null' && !operator) || (qualifier && (base === 'Null' || base === 'Bool')) || (ifExists && base === 'Null')) {
    throw new PolicyEvaluationError(`unsupported condition operator ${operatorName} in ${statementWhere}`);
  }
  if (!options.contextKeys.has(keyName)) {
    throw new PolicyEvaluationError(`unsupported condition key ${key} in ${statementWhere}: the local gate supplies only ${[...options.contextKeys].join(', ')}`);
  }
  const values = conditionValues(value, where);

  if (!operator) {
    if (values.length !== 1 || !['true', 'false'].includes(values[0]!.toLowerCase())) throw new PolicyEvaluationError(`${where} must be "true" or "false"`);
    const absent = values[0]!.toLowerCase() === 'true';
    return { where, test: (context) => (context.get(keyName) === undefined) === absent };
  }
  if (base === 'Bool' && values.some((item) => !['true', 'false'].includes(item.toLowerCase()))) throw new PolicyEvaluationError(`${where} must be "true" or "false"`);
  const matchesAny = anyOf(values.map(operator.matcher));
  // One request value: ORed policy values, NORed for a negated operator.
  const one = operator.negated ? (item: string) => !matchesAny(item) : matchesAny;

  return {
    where,
    test: (context) => {
      const found = context.get(keyName);
      if (found === undefined || (qualifier && found.length === 0)) {
        if (ifExists) return true;
        if (qualifier === 'ForAllValues') return true;
        if (qualifier === 'ForAnyValue') return false;
        return operator.negated;
      }
      if (qualifier === 'ForAnyValue') return found.some(one);
      if (qualifier === 'ForAllValues') return found.every(one);
      if (found.length !== 1) throw new PolicyEvaluationError(`${where}: the request has several values for ${key}; a single-valued operator cannot judge them (use ForAnyValue or ForAllValues)`);
      return one(found[0]!);
    },
  };
}

function compileStatement(raw: unknown, where: string, options: CompileOptions): CompiledStatement {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyEvaluationError(`${where} is not an object`);
  const statement = raw as Record<string, unknown>;
  for (const element of Object.keys(statement)) {
    if (!STATEMENT_ELEMENTS.has(element)) throw new PolicyEvaluationError(`unsupported policy element ${element} in ${where}`);
  }
  const effect = statement['Effect'];
  if (effect !== 'Allow' && effect !== 'Deny') throw new PolicyEvaluationError(`${where} has Effect ${JSON.stringify(effect)}, not Allow or Deny`);
  const pair = (positive: string, negative: string, ignoreCase: boolean) => {
    const has = statement[positive] !== undefined;
    if (has === (statement[negative] !== undefined)) throw new PolicyEvaluationError(`${where} must have exactly one of ${positive} and ${negative}`);
    const name = has ? positive : negative;
    return { not: !has, match: anyOf(list(statement[name], `${name} of ${where}`).map((pattern) => wildcardMatcher(pattern, ignoreCase))) };
  };
  const conditions: CompiledCondition[] = [];
  const condition = statement['Condition'];
  if (condition !== undefined) {
    if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) throw new PolicyEvaluationError(`the Condition of ${where} is not an object`);
    for (const [operatorName, keys] of Object.entries(condition)) {
      if (keys === null || typeof keys !== 'object' || Array.isArray(keys)) throw new PolicyEvaluationError(`Condition ${operatorName} in ${where} is not an object of keys`);
      for (const [key, value] of Object.entries(keys)) conditions.push(compileCondition(operatorName, key, value, where, options));
    }
  }
  return { deny: effect === 'Deny', action: pair('Action', 'NotAction', true), resource: pair('Resource', 'NotResource', false), conditions };
}

/** Checks and compiles identity policies once; throws PolicyEvaluationError on any element it would not evaluate. */
export function compilePolicies(policies: readonly PolicyDocument[], options: CompileOptions): CompiledPolicies {
  const statements: CompiledStatement[] = [];
  policies.forEach((policy, policyIndex) => {
    const document = policy as unknown as Record<string, unknown>;
    for (const element of Object.keys(document)) {
      if (!POLICY_ELEMENTS.has(element)) throw new PolicyEvaluationError(`unsupported policy element ${element} in policy ${policyIndex}`);
    }
    if (document['Version'] !== undefined && !VERSIONS.has(document['Version'] as string)) {
      throw new PolicyEvaluationError(`policy ${policyIndex} has Version ${JSON.stringify(document['Version'])}, not 2012-10-17 or 2008-10-17`);
    }
    [document['Statement'] ?? []].flat().forEach((statement: unknown, index) => {
      const sid = (statement as { Sid?: unknown } | null)?.Sid;
      statements.push(compileStatement(statement, `statement ${index}${typeof sid === 'string' ? ` (${sid})` : ''} of policy ${policyIndex}`, options));
    });
  });
  return { statements };
}

/**
 * The decision of the policies on one request: an explicit Deny wins over
 * any Allow, and no Allow is an implicit deny (policy evaluation logic).
 */
export function judge(policies: CompiledPolicies, request: EvaluationRequest): Verdict {
  const context = new Map<string, readonly string[]>();
  for (const [key, value] of Object.entries(request.context)) context.set(key.toLowerCase(), typeof value === 'string' ? [value] : value);
  let allowed = false;
  for (const statement of policies.statements) {
    if (statement.deny === false && allowed) continue;
    if (statement.action.match(request.action) === statement.action.not) continue;
    if (statement.resource.match(request.resource) === statement.resource.not) continue;
    if (!statement.conditions.every((condition) => condition.test(context))) continue;
    if (statement.deny) return 'explicitly-denied';
    allowed = true;
  }
  return allowed ? 'allowed' : 'implicitly-denied';
}
