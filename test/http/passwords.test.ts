import { afterAll, describe, expect, it } from "vitest";
import { isGatewayError } from "chat-gateway/protocol";
import { PasswordVerifier, hashPassword } from "chat-gateway/login";
import { isBcryptHash, truncatePassword } from "../../adapters/http/passwords.js";
import { COST12_HASHES as HASHES, FOREIGN_HASHES } from "./helpers.js";

const verifier = new PasswordVerifier({ workers: 2, maxQueue: 1 });
afterAll(() => verifier.close());

describe("passwords", () => {
  it("hashPassword makes a $2b$ hash at cost 12 that verifies, never the plaintext", async () => {
    const hash = await hashPassword("correct horse");
    expect(hash).toMatch(/^\$2b\$12\$[./A-Za-z0-9]{53}$/);
    expect(hash).not.toContain("correct horse");
    expect(await verifier.verify("correct horse", hash)).toBe(true);
    expect(await verifier.verify("correct horsE", hash)).toBe(false);
  });

  it.each(FOREIGN_HASHES)("verifies a hash made by $impl", async ({ password, hash }) => {
    expect(await verifier.verify(password, hash)).toBe(true);
    expect(await verifier.verify(`${password}!`, hash)).toBe(false);
  });

  it("an unknown user or a broken hash is false and costs a full cost-12 comparison", async () => {
    const t0 = performance.now();
    expect(await verifier.verify("alice-password", HASHES["alice-password"])).toBe(true);
    const known = performance.now() - t0;
    const t1 = performance.now();
    expect(await verifier.verify("alice-password", undefined)).toBe(false);
    const unknown = performance.now() - t1;
    const t2 = performance.now();
    expect(await verifier.verify("alice-password", "plaintext-by-mistake")).toBe(false);
    const broken = performance.now() - t2;
    // Same work: within a factor of two either way (shared CPUs make it noisy, never 10x).
    expect(unknown).toBeGreaterThan(known / 2);
    expect(broken).toBeGreaterThan(known / 2);
    expect(unknown).toBeLessThan(known * 2 + 200);
  });

  it("cuts login passwords to the first 72 bytes, as bcrypt reads them", async () => {
    expect(truncatePassword("short")).toBe("short");
    expect(truncatePassword("x".repeat(1000))).toBe("x".repeat(72));
    // A character that straddles byte 72 is kept whole: bcrypt still reads only bytes 1..72.
    expect(truncatePassword(`${"x".repeat(71)}é${"y".repeat(10)}`)).toBe(`${"x".repeat(71)}é`);
    expect(await verifier.verify(`${"x".repeat(72)}${"z".repeat(10_000)}`, HASHES.x72)).toBe(true);
    expect(await verifier.verify(`${"x".repeat(71)}é`, HASHES.x72)).toBe(false);
  });

  it("refuses a check beyond workers + maxQueue with rate_limited, and recovers", async () => {
    const runs = Array.from({ length: 4 }, () =>
      verifier.verify("nope", HASHES["bob-password"]).then(
        (v) => ({ ok: v }),
        (e: unknown) => ({ error: e }),
      ),
    );
    const results = await Promise.all(runs);
    const refused = results.filter((r) => "error" in r);
    expect(refused).toHaveLength(1);
    expect(
      isGatewayError((refused[0] as { error: unknown }).error) &&
        (refused[0] as { error: { code: string } }).error.code,
    ).toBe("rate_limited");
    expect(verifier.pending).toBe(0);
    expect(await verifier.verify("bob-password", HASHES["bob-password"])).toBe(true);
  });

  it("recognises bcrypt hashes", () => {
    for (const { hash } of FOREIGN_HASHES) expect(isBcryptHash(hash)).toBe(true);
    expect(isBcryptHash(`$2x$12$${"a".repeat(53)}`)).toBe(false);
    expect(isBcryptHash("$2b$12$short")).toBe(false);
  });
});
