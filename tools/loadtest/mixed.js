// Mixed traffic in realistic proportions: mostly product reads, some list
// pages, a few writes and orders, rare reports. Run the app with
// RATE_LIMIT=off (one k6 machine is one client IP); see README.md.
import http from 'k6/http';
import { check, sleep } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://localhost:8080';
const RUN = Date.now().toString(36);
const JSON_HEADERS = { 'Content-Type': 'application/json' };
// Product writes need a key with write scope: compose's demo key by default.
const WRITE_HEADERS = { ...JSON_HEADERS, Authorization: `Bearer ${__ENV.API_KEY || 'demo-write-key-change-me'}` };

export const options = {
  scenarios: {
    mixed: {
      executor: 'ramping-vus', startVUs: 0,
      stages: [
        { duration: '20s', target: Number(__ENV.VUS || 50) },
        { duration: __ENV.DURATION || '60s', target: Number(__ENV.VUS || 50) },
        { duration: '10s', target: 0 },
      ],
    },
  },
  thresholds: {
    // Reads come from the cache: fast even while writes invalidate entries.
    'http_req_duration{kind:read}': ['p(95)<200'],
    'http_req_duration{kind:list}': ['p(95)<200'],
    // Fewer than 1% of all requests fail (a shed report is not a failure).
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
  },
};

const randomId = () => 1 + Math.floor(Math.random() * 1000);

// kind → [share of requests, action]. Shares add up to 100.
const MIX = [
  [70, 'read', () => http.get(`${BASE_URL}/products/${randomId()}`, { tags: { kind: 'read', name: 'GET /products/:id' } })],
  [12, 'list', () => http.get(`${BASE_URL}/products?limit=20&after=${Math.floor(Math.random() * 980)}`, { tags: { kind: 'list', name: 'GET /products' } })],
  [5, 'write', () => {
    const id = randomId();
    return http.put(`${BASE_URL}/products/${id}`,
      JSON.stringify({ name: `Product ${id}`, price_cents: 100 + Math.floor(Math.random() * 9900) }),
      { headers: WRITE_HEADERS, tags: { kind: 'write', name: 'PUT /products/:id' } });
  }],
  [11, 'order', () => http.post(`${BASE_URL}/orders`, JSON.stringify({ product_id: randomId(), quantity: 1 }), {
    headers: { ...JSON_HEADERS, 'Idempotency-Key': `k6-mixed-${RUN}-${__VU}-${__ITER}` },
    tags: { kind: 'order', name: 'POST /orders' },
  })],
  [2, 'report', () => http.get(`${BASE_URL}/reports/top-products`, {
    tags: { kind: 'report', name: 'GET /reports/top-products' },
    responseCallback: http.expectedStatuses(200, 503), // low priority: may be shed
  })],
];
const OK = { read: [200], list: [200], write: [200], order: [201], report: [200, 503] };

export default function () {
  let roll = Math.random() * 100;
  const [, kind, action] = MIX.find(([share]) => (roll -= share) < 0) || MIX[0];
  const res = action();
  check(res, { [`${kind} status ok`]: (r) => OK[kind].includes(r.status) });
  sleep(0.05 + Math.random() * 0.2); // think time
}
