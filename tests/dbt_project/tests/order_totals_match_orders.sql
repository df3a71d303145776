-- A singular test: the materialized view's totals add up to the orders it reads.
-- Returns a row (a failure) when they do not.
select t.total, o.total
from (select sum(total_amount) as total, sum(order_count) as n from {{ ref('order_totals') }}) t
cross join (select sum(amount) as total, count(*) as n from {{ ref('stg_orders') }}) o
where t.total <> o.total or t.n <> o.n
