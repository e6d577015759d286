index_scan|SELECT id, name FROM customers WHERE email = 'user42@example.com'
seq_filter|SELECT id, name FROM customers WHERE name = 'Customer 42'
hash_join|SELECT c.name, sum(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'done' GROUP BY c.name
nested_loop|SELECT c.name, o.total FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.email = 'user7@example.com'
merge_join|SELECT count(*) FROM customers c JOIN orders o ON o.id = c.id
hashagg|SELECT customer_id, sum(total) FROM orders GROUP BY customer_id
sort_limit|SELECT * FROM orders ORDER BY total DESC, id LIMIT 10
bitmap|SELECT count(*) FROM orders WHERE customer_id IN (1,2,3,4,5) OR status = 'pending'
ios_backward|SELECT id FROM customers ORDER BY id DESC LIMIT 5
subplan|SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) FROM customers c WHERE c.id < 10
initplan|SELECT * FROM orders WHERE total > (SELECT avg(total) FROM orders) AND id < 100
cte|WITH big AS MATERIALIZED (SELECT customer_id, count(*) n FROM orders GROUP BY customer_id) SELECT * FROM big WHERE n > 5 ORDER BY n DESC
function_values|SELECT g, v.x FROM generate_series(1, 3) g, (VALUES (1), (2)) AS v(x)
union_window|SELECT id, rank() OVER (ORDER BY total) FROM (SELECT id, total FROM orders WHERE id < 50 UNION ALL SELECT id, 0 FROM customers WHERE id < 50) s
anti_join|SELECT count(*) FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)
distinct|SELECT DISTINCT status FROM orders
quoted|SELECT "Weird Col" FROM (SELECT 1 AS "Weird Col") "my alias"
