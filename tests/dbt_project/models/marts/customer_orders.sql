{{ config(materialized=table_materialization(), indexes=[{'columns': ['customer_id']}]) }}

-- one row per customer: how many orders and how much they spent (the table model)
select
    c.id as customer_id,
    c.name,
    c.country,
    count(o.id) as order_count,
    coalesce(sum(o.amount), 0) as total_amount
from {{ ref('stg_customers') }} c
left join {{ ref('stg_orders') }} o on o.customer_id = c.id
group by c.id, c.name, c.country
