/**
 * A fresh workload identity signing key in the `OIDC_SIGNING_KEYS` format
 * (`keyId:base64(PKCS#8 DER)`, RSA 2048, RS256), for `npm start`'s local secrets and tests. The
 * same as `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -outform DER | base64 -w0`.
 */
export async function generateSigningKey(keyId: string): Promise<string> {
  const pair = (await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  )) as { privateKey: Parameters<typeof crypto.subtle.exportKey>[1] };
  const der = await crypto.subtle.exportKey("pkcs8", pair.privateKey);
  return `${keyId}:${Buffer.from(der).toString("base64")}`;
}
