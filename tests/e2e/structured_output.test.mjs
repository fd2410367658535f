// E2E: structured output through the official `openai` client against a real `cai serve` on a model that knows no
// JSON (stories260K, trained on TinyStories; its byte tokens can spell any text): 10 schemas × 20 samples at
// temperature 1 all parse and validate with ajv and finish with "stop"; zodResponseFormat on what zod 4 writes for
// .int(), .positive(), .email(), .uuid(), .regex() and discriminated unions; json_object gives objects; schemas outside
// the supported subset are a 400 naming the keyword.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Ajv from "ajv";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

import { repoRoot, startServer } from "./server_harness.mjs";

const MODEL = join(repoRoot, "tests", "data", "models", "stories260K.gguf");
const PROMPT = [{ role: "user", content: "Once upon a time" }];
const SAMPLES = 20;
const PER_REQUEST = 10;  // n per request: two requests per schema

const SCHEMAS = {
  person: { type: "object", properties: { name: { type: "string", minLength: 1, maxLength: 10 },
                                          age: { type: "integer", minimum: 0, maximum: 120 } },
            required: ["name", "age"], additionalProperties: false },
  color: { type: "string", enum: ["red", "green", "blue"] },
  small_scalar: { anyOf: [{ type: "boolean" }, { type: "null" }, { type: "integer", minimum: -5, maximum: 5 }] },
  digits: { type: "array", items: { type: "integer", minimum: 0, maximum: 9 }, minItems: 1, maxItems: 4 },
  nested: { type: "object", properties: {
              user: { type: "object", properties: { first: { type: "string", maxLength: 8 },
                                                    last: { type: "string", maxLength: 8 } },
                      required: ["first", "last"], additionalProperties: false },
              admin: { type: "boolean" } },
            required: ["user", "admin"], additionalProperties: false },
  points: { $defs: { point: { type: "object", properties: { x: { type: "integer", minimum: -10, maximum: 10 },
                                                            y: { type: "integer", minimum: -10, maximum: 10 } },
                              required: ["x", "y"], additionalProperties: false } },
            type: "array", items: { $ref: "#/$defs/point" }, maxItems: 3 },
  optional_fields: { type: "object", properties: { a: { type: "boolean" }, b: { enum: [1, 2, 3] },
                                                   c: { type: "string", maxLength: 5 } },
                     additionalProperties: false },
  flag_or_null: { type: ["boolean", "null"] },
  bounded_number: { type: "number", minimum: -2.5, maximum: 1000 },
  story: { type: "object", properties: { kind: { const: "story" }, mood: { enum: ["happy", "sad"] },
                                         words: { type: "array", maxItems: 3,
                                                  items: { type: "string", minLength: 1, maxLength: 6 } } },
           required: ["kind", "mood", "words"], additionalProperties: false },
};

function format(name, schema) {
  return { type: "json_schema", json_schema: { name, schema, strict: true } };
}

describe("structured output (stories260K)", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer([], { model: MODEL, ctxSize: 512 });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: "unused", maxRetries: 0 });
  });
  after(async () => { assert.equal(await server.stop(), 0); });

  test(`${Object.keys(SCHEMAS).length} schemas × ${SAMPLES} samples at temperature 1 validate`, async () => {
    const ajv = new Ajv();
    await Promise.all(Object.entries(SCHEMAS).map(async ([name, schema]) => {
      const validate = ajv.compile(schema);
      const outputs = [];
      for (let seed = 1; outputs.length < SAMPLES; ++seed) {
        const r = await client.chat.completions.create({ model: "stories260K", messages: PROMPT, temperature: 1, seed,
                                                         n: PER_REQUEST, max_tokens: 300,
                                                         response_format: format(name, schema) });
        for (const c of r.choices) {
          assert.equal(c.finish_reason, "stop", `${name}: ${c.message.content}`);
          outputs.push(c.message.content);
        }
      }
      for (const text of outputs) {
        const value = JSON.parse(text);
        assert.ok(validate(value), `${name}: ${text} → ${ajv.errorsText(validate.errors)}`);
      }
      assert.ok(new Set(outputs).size > 1, `${name}: the model had no choice: ${outputs[0]}`);
    }));
  });

  test("a streamed json_schema answer is the same valid JSON", async () => {
    const request = { model: "stories260K", messages: PROMPT, temperature: 1, seed: 5, max_tokens: 300,
                      response_format: format("person", SCHEMAS.person) };
    const whole = await client.chat.completions.create(request);
    let text = "";
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true }))
      text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, whole.choices[0].message.content);
    assert.ok(new Ajv().validate(SCHEMAS.person, JSON.parse(text)), text);
  });

  // Unbounded strings let this model ramble past max_tokens ("length"); what it finishes must be an object.
  test("json_object: answers are JSON objects, or their beginning when cut by max_tokens", async () => {
    const r = await client.chat.completions.create({ model: "stories260K", messages: PROMPT, temperature: 1, seed: 3,
                                                     n: 8, max_tokens: 60, response_format: { type: "json_object" } });
    for (const c of r.choices) assert.ok(c.message.content.startsWith("{"), c.message.content);
    for (const c of r.choices.filter((c) => c.finish_reason === "stop")) {
      const value = JSON.parse(c.message.content);
      assert.equal(typeof value, "object", c.message.content);
      assert.ok(value !== null && !Array.isArray(value), c.message.content);
    }
    for (const c of r.choices) assert.ok(["stop", "length"].includes(c.finish_reason));
  });

  // chat.completions.parse checks the answer with the zod schema itself; the schema is zod 4's own JSON Schema.
  test("zodResponseFormat: zod 4 integers, formats, a pattern and a discriminated union", async () => {
    const Contact = z.object({
      id: z.uuid(),
      email: z.email().max(24),
      age: z.number().int().positive().max(120),
      code: z.string().regex(/^[A-Z]{2}-\d{3}$/),
      reach: z.discriminatedUnion("by", [z.object({ by: z.literal("mail"), floor: z.number().int().min(0).max(9) }),
                                         z.object({ by: z.literal("phone") })]),
    });
    for (let seed = 0; seed < 4; ++seed) {
      const r = await client.chat.completions.parse({ model: "stories260K", messages: PROMPT, max_tokens: 400,
                                                      temperature: 1, seed,
                                                      response_format: zodResponseFormat(Contact, "contact") });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, "stop", choice.message.content);
      assert.deepEqual(Contact.parse(choice.message.parsed), choice.message.parsed);
    }
  });

  test("schemas outside the subset are a 400 naming the keyword", async () => {
    const cases = [
      [{ type: "string", pattern: "(a)\\1" }, /pattern/],  // a backreference: no regular language
      [{ not: { type: "string" } }, /not/],
      [{ if: { type: "string" }, then: { minLength: 2 } }, /if/],
      [{ $defs: { n: { type: "array", items: { $ref: "#/$defs/n" } } }, $ref: "#/$defs/n" }, /\$ref: recursive/],
    ];
    for (const [schema, keyword] of cases) {
      await assert.rejects(
        client.chat.completions.create({ model: "stories260K", messages: PROMPT, response_format: format("x", schema) }),
        (err) => err instanceof OpenAI.BadRequestError && err.param === "response_format" && keyword.test(err.message),
        JSON.stringify(schema));
    }
    await assert.rejects(
      client.chat.completions.create({ model: "stories260K", messages: PROMPT,
                                       response_format: { type: "json_schema", json_schema: { schema: {} } } }),
      (err) => err instanceof OpenAI.BadRequestError && /json_schema.name/.test(err.message));
  });
});
