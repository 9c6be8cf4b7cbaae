'use strict';
// push.js drives pushgate with prom-client's Pushgateway for the e2e tests.
//
// Usage: node push.js '<json>' where the JSON object holds
//   url:       the gateway base URL
//   action:    "push" (PUT), "pushAdd" (POST) or "delete"
//   job:       the job name
//   groupings: an object of extra grouping labels (optional)
//   gauges:    an object of gauge name -> value (optional)
//   counters:  an object of counter name -> increment (optional)
//   auth:      "user:password" for basic auth (optional)
//   bearer:    a bearer token sent in an Authorization header (optional)
//   ca:        a CA certificate file to trust for https URLs (optional)
//   gzip:      true to send the body gzip-compressed (optional)
// It exits 0 on success and 1, printing the error, on failure.
const fs = require('fs');
const client = require('prom-client');

async function main() {
  const cmd = JSON.parse(process.argv[2]);
  const registry = new client.Registry();
  for (const [name, value] of Object.entries(cmd.gauges || {})) {
    const g = new client.Gauge({ name, help: `Node gauge ${name}.`, registers: [registry] });
    g.set(value);
  }
  for (const [name, value] of Object.entries(cmd.counters || {})) {
    const c = new client.Counter({ name, help: `Node counter ${name}.`, registers: [registry] });
    c.inc(value);
  }
  // prom-client passes these options on to http.request / https.request.
  const options = { timeout: 30000, headers: {} };
  if (cmd.auth) {
    options.auth = cmd.auth;
  }
  if (cmd.bearer) {
    options.headers.Authorization = `Bearer ${cmd.bearer}`;
  }
  if (cmd.ca) {
    options.ca = fs.readFileSync(cmd.ca);
  }
  if (cmd.gzip) {
    options.headers['Content-Encoding'] = 'gzip';
  }
  const gateway = new client.Pushgateway(cmd.url, options, registry);
  const params = { jobName: cmd.job };
  if (cmd.groupings) {
    params.groupings = cmd.groupings;
  }
  const { resp, body } = await gateway[cmd.action](params);
  process.stdout.write(`${resp.statusCode} ${body}\n`);
}

main().catch(err => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
