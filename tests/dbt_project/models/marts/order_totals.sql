{{ config(materialized=materialized_view_or_view()) }}

-- The materialized view model: order count and amount per status, kept up to date.
select status, count(*) as order_count, sum(amount) as total_amount
from {{ ref('stg_orders') }}
group by status
