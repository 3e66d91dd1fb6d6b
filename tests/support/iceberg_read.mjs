// Test support: reads an Iceberg table with icebird (an independent reader: its own Avro and Parquet code) and
// prints one JSON object: the row count, the distinct values of a key column and an order-independent hash of every
// row's content. Usage: ICEBIRD_DIR=third_party/icebird node iceberg_read.mjs <table-url>[,<table-url>...]
// <key-column> [s3-mirror]; several tables are read as one (what two writers' tables hold together). A URL may end
// in @<metadata file name>: the version to read (a Glue table has no version hint; its catalog names the file).
//   <table-url> is file:///path/to/table or s3://bucket/prefix/table; s3 objects are read from <s3-mirror>/<bucket>/
//   <key>, where the test downloaded them (aws s3 cp). icebird fetches with fetch(), so fetch is given both here.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

// icebird is installed by scripts/install-deps.sh under third_party/, not beside this script.
const icebird = pathToFileURL(join(process.env.ICEBIRD_DIR, 'node_modules/icebird/src/index.js'))
const { icebergMetadata, icebergRead } = await import(icebird)

const [tableUrls, keyColumn, s3Mirror] = process.argv.slice(2)
const realFetch = globalThis.fetch

function rangeOf(init) {
  const headers = new Headers(init?.headers)
  const range = headers.get('range')
  const m = range && /bytes=(\d+)-(\d*)/.exec(range)
  return m ? [Number(m[1]), m[2] === '' ? undefined : Number(m[2]) + 1] : undefined
}

globalThis.fetch = async (url, init) => {
  url = String(url)
  // icebird turns s3://bucket/key into https://bucket.s3.amazonaws.com/key.
  const s3 = /^https:\/\/([^.]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url)
  if (s3 && s3Mirror) url = pathToFileURL(join(s3Mirror, s3[1], s3[2])).href
  if (url.startsWith('file://')) {
    let bytes
    try {
      bytes = await readFile(fileURLToPath(url))
    } catch {
      return new Response(null, { status: 404, statusText: 'Not Found' })
    }
    const range = rangeOf(init)
    if (range) return new Response(bytes.subarray(range[0], range[1]), { status: 206 })
    return new Response(bytes, { status: 200, headers: { 'content-length': String(bytes.length) } })
  }
  return realFetch(url, init)
}

function canonical(value) {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  if (value === undefined) return null
  return value
}

const rows = []
let metadata
let snapshots = 0
for (const table of tableUrls.split(',')) {
  const [tableUrl, metadataFileName] = table.split('@')
  metadata = await icebergMetadata({ tableUrl, metadataFileName })
  snapshots += metadata.snapshots.length
  for (const row of await icebergRead({ tableUrl, metadata })) rows.push(row)
}
const lines = rows.map(row => JSON.stringify(Object.keys(row).sort().map(k => [k, canonical(row[k])])))
lines.sort()
const hash = createHash('sha256')
for (const line of lines) hash.update(line + '\n')
const keys = new Set(rows.map(row => String(canonical(row[keyColumn]))))
const schema = metadata.schemas.find(s => s['schema-id'] === metadata['current-schema-id'])
console.log(JSON.stringify({
  rows: rows.length,
  distinct_keys: keys.size,
  hash: hash.digest('hex'),
  columns: schema.fields.map(f => f.name),
  snapshots,
}))
