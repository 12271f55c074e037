// Overload: more report traffic than the reports pool can take, alongside
// steady checkout. Reports may be shed (503 + Retry-After); checkout must not
// notice. Run the app with RATE_LIMIT=off and small pools; see README.md.
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://localhost:8080';
const DURATION = __ENV.DURATION || '60s';
const RUN = Date.now().toString(36); // keeps Idempotency-Keys unique across runs

const reportsShed = new Counter('reports_shed');

export const options = {
  scenarios: {
    checkout: {
      executor: 'constant-arrival-rate', exec: 'checkout', duration: DURATION,
      rate: Number(__ENV.CHECKOUT_RATE || 100), timeUnit: '1s',
      preAllocatedVUs: 50, maxVUs: 300,
    },
    reports: {
      executor: 'constant-arrival-rate', exec: 'reports', duration: DURATION,
      rate: Number(__ENV.REPORTS_RATE || 200), timeUnit: '1s',
      preAllocatedVUs: 100, maxVUs: 500,
    },
  },
  thresholds: {
    // Checkout (critical) keeps working while reports are shed.
    'http_req_failed{scenario:checkout}': ['rate<0.01'],
    'http_req_duration{scenario:checkout}': ['p(95)<500'],
    // Reports: 200 or a fast 503 only (503 is not a failure, see below).
    'http_req_failed{scenario:reports}': ['rate<0.01'],
    // Every shed answer tells the client when to come back.
    'checks{promise:retry_after}': ['rate==1'],
  },
};

const reportParams = {
  tags: { name: 'GET /reports/top-products' },
  responseCallback: http.expectedStatuses(200, 503),
};

export function checkout() {
  const productId = 1 + Math.floor(Math.random() * 1000);
  const res = http.post(`${BASE_URL}/orders`,
    JSON.stringify({ product_id: productId, quantity: 1 }), {
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `k6-${RUN}-${__VU}-${__ITER}` },
      tags: { name: 'POST /orders' },
    });
  check(res, { 'order created (201)': (r) => r.status === 201 });
  checkRetryAfter(res);
}

export function reports() {
  const res = http.get(`${BASE_URL}/reports/top-products?days=30&limit=10`, reportParams);
  check(res, { 'report 200 or shed 503': (r) => r.status === 200 || r.status === 503 });
  if (res.status === 503) reportsShed.add(1);
  checkRetryAfter(res);
}

// Passes trivially for non-503 answers, so the threshold always has samples.
function checkRetryAfter(res) {
  check(res, {
    '503 carries Retry-After': (r) => r.status !== 503 || /^[1-9][0-9]*$/.test(r.headers['Retry-After'] || ''),
  }, { promise: 'retry_after' });
}

// With k6's --vus/--duration flags the scenarios above are replaced by one
// that runs the default function: then each iteration is a report or an
// order, two reports to one order (the scenarios' rates), so the script
// still overloads the reports pool beside checkout. Its thresholds tagged
// by scenario then have no samples; use -e DURATION=… to keep them.
export default function () {
  if (__ITER % 3 === 2) {
    checkout();
  } else {
    reports();
  }
}
