#!/usr/bin/env node
// validate.mjs DIR...: checks every *.yaml in the folders (one Kubernetes object per file, as
// gpufit writes them) the way `kubectl apply` / `kubectl patch` with strict field validation
// would, before anything reaches a cluster. One line per error, `FILE: /json/path: message`;
// exit 1 on any error, 2 on bad usage; on success prints `validated N objects`.
//
// Each object is checked by apiVersion + kind on two counts:
//  * types, enums, required: the ajv validators of kubernetes-models (Kubernetes API types)
//    and @kubernetes-models/keda (KEDA CRDs); else a schema under schemas/ (CRDs no package
//    ships: NVIDIA ClusterPolicy and GpuConfig, Kueue), each citing the upstream type it follows;
//  * unknown fields (kubectl's default, --validate=strict): the field lists of
//    @kubernetes/client-node's models (attributeTypeMap, generated from the Kubernetes OpenAPI);
//    else the schemas/ file, whose objects are closed (additionalProperties false).
// An apiVersion/kind with neither is an error. Objects embedded in a DRA ResourceClaim(Template)
// (devices.config[].opaque.parameters) are checked the same way by their own apiVersion/kind.
//
// Patches: a file is a patch when the folder's README.md (written by gpufit) applies it with
// `kubectl patch` or through kustomize `patches:`; every other file is a full object. A patch
// may leave out required fields, so its `required` errors are dropped, and a null value
// deletes a key (strategic-merge and merge patches), so null values are not type-checked.
// Every other error counts for patches too. A full object also needs metadata.name.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import Ajv from "ajv";
import * as clientModels from "@kubernetes/client-node/dist/gen/models/all.js";
import { validate as validateObjectMeta } from "@kubernetes-models/apimachinery/_schemas/IoK8sApimachineryPkgApisMetaV1ObjectMeta";

const here = dirname(fileURLToPath(import.meta.url));

// schemas/*.json, keyed by "apiVersion/kind" (their apiVersion and kind consts).
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false })  // ClusterPolicy requires fields it does not model;
const ownSchemas = new Map();
for (const f of readdirSync(join(here, "schemas")).filter((n) => n.endsWith(".json")).sort()) {
  const schema = JSON.parse(readFileSync(join(here, "schemas", f), "utf8"));
  const key = `${schema.properties.apiVersion.const}/${schema.properties.kind.const}`;
  ownSchemas.set(key, { file: `schemas/${f}`, validate: ajv.compile(schema), hasMetadata: "metadata" in (schema.properties ?? {}) });
}

// The package model class of apiVersion/kind, or null.
async function packageModel(apiVersion, kind) {
  const spec = apiVersion.startsWith("keda.sh/")
    ? `@kubernetes-models/keda/${apiVersion}/${kind}`
    : `kubernetes-models/${apiVersion}/${kind}`;
  try {
    const mod = await import(spec);
    return mod[kind] ?? null;
  } catch (e) {
    if (e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED" || e.code === "ERR_MODULE_NOT_FOUND") return null;
    throw e;
  }
}

// client-node's model name of a Kubernetes kind: "V2HorizontalPodAutoscaler" for
// autoscaling/v2, or group-prefixed where two groups share a kind ("CoreV1Event").
function clientModelName(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["core", apiVersion];
  const v = version[0].toUpperCase() + version.slice(1);
  const g = group.split(".")[0];
  for (const name of [`${v}${kind}`, `${g[0].toUpperCase()}${g.slice(1)}${v}${kind}`])
    if (clientModels[name]?.attributeTypeMap) return name;
  return null;
}

// Unknown fields of `value` read as client-node type `type` (recursive).
function unknownFields(value, type, path, out) {
  if (value === null || typeof value !== "object") return;
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], `${path}/${i}`, out));
  } else if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (!Array.isArray(value)) for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], `${path}/${k}`, out);
  } else if (clientModels[type]?.attributeTypeMap && !Array.isArray(value)) {
    const fields = new Map(clientModels[type].attributeTypeMap.map((a) => [a.baseName, a.type]));
    for (const [k, v] of Object.entries(value)) {
      if (!fields.has(k)) out.push({ path: `${path}/${k}`, message: `unknown field "${k}"` });
      else unknownFields(v, fields.get(k), `${path}/${k}`, out);
    }
  }
}

function ajvErrors(errors, prefix = "") {
  return (errors ?? []).map((e) => {
    let message = e.message;
    if (e.keyword === "additionalProperties") {
      return { path: `${prefix}${e.instancePath}/${e.params.additionalProperty}`, message: `unknown field "${e.params.additionalProperty}"`, keyword: e.keyword };
    }
    if (e.keyword === "enum") message += `: ${e.params.allowedValues.map((v) => JSON.stringify(v)).join(", ")}`;
    if (e.keyword === "const") message += `: ${JSON.stringify(e.params.allowedValue)}`;
    return { path: `${prefix}${e.instancePath}`, message, keyword: e.keyword };
  });
}

// Errors of one object (already without nulls if a patch), paths under `prefix`.
async function check(obj, prefix) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return [{ path: prefix || "/", message: "not an object" }];
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string")
    return [{ path: prefix || "/", message: "apiVersion and kind must be strings" }];
  const key = `${apiVersion}/${kind}`;
  const own = ownSchemas.get(key);
  const model = await packageModel(apiVersion, kind);
  const fieldsOf = own ? null : clientModelName(apiVersion, kind);
  if (!own && !model) return [{ path: prefix || "/", message: `unknown apiVersion/kind ${key}: no schema (add one under tools/validate-manifests/schemas/)` }];
  if (!own && !fieldsOf) return [{ path: prefix || "/", message: `${key}: no field list for the unknown-field check (add a schema under tools/validate-manifests/schemas/)` }];
  const errors = [];
  if (model) {
    try {
      new model(obj).validate();
    } catch (e) {
      if (!e.errors) throw e;
      errors.push(...ajvErrors(e.errors, prefix));
    }
  }
  if (own) {
    if (!own.validate(obj)) errors.push(...ajvErrors(own.validate.errors, prefix));
    // Every custom resource has a standard ObjectMeta.
    if (obj.metadata && typeof obj.metadata === "object") {
      if (!validateObjectMeta(obj.metadata)) errors.push(...ajvErrors(validateObjectMeta.errors, `${prefix}/metadata`));
      unknownFields(obj.metadata, "V1ObjectMeta", `${prefix}/metadata`, errors);
    }
  } else {
    unknownFields(obj, fieldsOf, prefix, errors);
  }
  // DRA: opaque device parameters are objects of their own (apiVersion/kind).
  if (apiVersion.startsWith("resource.k8s.io/") && /^ResourceClaim(Template)?$/.test(kind)) {
    const claimSpec = kind === "ResourceClaim" ? obj.spec : obj.spec?.spec;
    const at = kind === "ResourceClaim" ? "/spec" : "/spec/spec";
    const configs = claimSpec?.devices?.config;
    if (Array.isArray(configs))
      for (const [i, c] of configs.entries())
        if (c?.opaque?.parameters !== undefined)
          errors.push(...(await check(c.opaque.parameters, `${prefix}${at}/devices/config/${i}/opaque/parameters`)));
  }
  const seen = new Set();
  return errors.filter((e) => {
    const id = `${e.path}\n${e.message}`;
    return seen.has(id) ? false : (seen.add(id), true);
  });
}

// A patch's null values delete keys: dropped before the check.
function withoutNulls(v) {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(withoutNulls);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]));
  return v;
}

// File names that the folder's README.md applies as patches.
function patchesOf(dir) {
  const readme = join(dir, "README.md");
  const patches = new Set();
  if (!existsSync(readme)) return patches;
  for (const line of readFileSync(readme, "utf8").split("\n")) {
    const m = /^\| `([^`]+)` \|.*\| `([^`]*)` \|$/.exec(line);
    if (m && (/\bkubectl patch\b/.test(m[2]) || /\bkustomize\b/.test(m[2]))) patches.add(m[1]);
  }
  return patches;
}

async function main(dirs) {
  if (dirs.length === 0) {
    console.error("usage: validate.mjs DIR...");
    return 2;
  }
  let objects = 0, failures = 0;
  for (const dir of dirs) {
    let names;
    try {
      names = readdirSync(dir).filter((n) => n.endsWith(".yaml")).sort();
    } catch (e) {
      console.error(`${dir}: ${e.message}`);
      return 2;
    }
    const patches = patchesOf(dir);
    for (const name of names) {
      const file = join(dir, name);
      const report = (path, message) => {
        console.log(`${file}: ${path}: ${message}`);
        ++failures;
      };
      // YAML 1.1, as kubectl reads it (sigs.k8s.io/yaml on go-yaml v2): `on` is a boolean.
      const docs = parseAllDocuments(readFileSync(file, "utf8"), { version: "1.1", uniqueKeys: true });
      const list = Array.isArray(docs) ? docs : [docs];
      const broken = list.flatMap((d) => d.errors);
      if (broken.length > 0 || list.length !== 1) {
        report("/", broken.length > 0 ? `YAML: ${broken[0].message.split("\n")[0]}` : `${list.length} documents; one object per file`);
        continue;
      }
      const patch = patches.has(name);
      const obj = patch ? withoutNulls(list[0].toJS()) : list[0].toJS();
      let errors = await check(obj, "");
      if (patch) errors = errors.filter((e) => e.keyword !== "required");
      // A component config (a schema without metadata, e.g. KubeSchedulerConfiguration) has no name.
      else if (ownSchemas.get(`${obj?.apiVersion}/${obj?.kind}`)?.hasMetadata !== false &&
               (typeof obj?.metadata?.name !== "string" || obj.metadata.name === ""))
        errors.push({ path: "/metadata/name", message: "a full object needs a name" });
      for (const e of errors) report(e.path || "/", e.message);
      ++objects;
    }
  }
  if (failures > 0) {
    console.log(`${failures} errors in ${objects} objects`);
    return 1;
  }
  console.log(`validated ${objects} objects`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
