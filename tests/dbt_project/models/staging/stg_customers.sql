{{ config(materialized='view') }}

select id, name, upper(country) as country
from {{ ref('customers') }}
