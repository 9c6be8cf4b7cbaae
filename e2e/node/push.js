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
// It exits 0 on success and 1, printing the error, on failure.
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
  const gateway = new client.Pushgateway(cmd.url, { timeout: 30000 }, registry);
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
