#!/usr/bin/env bash
# Installs Black Widow on a Debian 12 instance and enables its systemd units.
# Called by the launch templates' user-data with BW_ROLE=hub|spawn and the ARNs/addresses exported.
# Secrets are fetched from Secrets Manager into a root-only environment file, never into user-data.
set -euo pipefail
cd "$(dirname "$0")/../.."
APP=$PWD
: "${BW_ROLE:?hub or spawn}"

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip jq
python3 -m venv "$APP/.venv"
"$APP/.venv/bin/pip" install -q "$APP"
id blackwidow >/dev/null 2>&1 || useradd --system --home "$APP" --shell /usr/sbin/nologin blackwidow

secret() { aws secretsmanager get-secret-value --region "$AWS_REGION" --secret-id "$1" --query SecretString --output text; }
imds_token=$(curl -fsS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
imds() { curl -fsS -H "X-aws-ec2-metadata-token: $imds_token" "http://169.254.169.254/latest/meta-data/$1"; }

install -d -m 0750 -o root -g blackwidow /etc/blackwidow
ENVF=/etc/blackwidow/env
umask 077
{
  echo "BW_NODE_SECRET=$(secret "$NODE_SECRET_ARN")"
  echo "BW_LOG_JSON=true"
  echo "BW_DATA_DIR=/var/lib/blackwidow"
  echo "BW_WIKI_ALLOWLIST=$BW_WIKI_ALLOWLIST"
} > "$ENVF"
install -d -o blackwidow -g blackwidow /var/lib/blackwidow

if [ "$BW_ROLE" = hub ]; then
  db_json=$(secret "$DB_SECRET_ARN")
  db_user=$(jq -r .username <<<"$db_json")
  db_pass=$(jq -rn --arg p "$(jq -r .password <<<"$db_json")" '$p|@uri')
  {
    echo "BW_ADMIN_TOKEN=$(secret "$ADMIN_TOKEN_ARN")"
    echo "BW_DATABASE_URL=postgresql+psycopg2://$db_user:$db_pass@$DB_HOST:$DB_PORT/blackwidow"
  } >> "$ENVF"
  units="blackwidow-api blackwidow-scheduler"
  set -a; . "$ENVF"; set +a
  "$APP/.venv/bin/blackwidow" migrate
else
  ip=$(imds local-ipv4)
  {
    echo "BW_HUB_URL=$BW_HUB_URL"
    echo "BW_ADVERTISE_URL=http://$ip:8701"
    echo "BW_BIND=$ip:8701"
    echo "BW_CASSANDRA_HOSTS=$BW_CASSANDRA_HOSTS"
    echo "BW_CASSANDRA_KEYSPACE=$BW_CASSANDRA_KEYSPACE"
    echo "BW_USER_AGENT=BlackWidow/0.1 ($BW_USER_AGENT_CONTACT) python-requests"
    echo "BW_ASG_NAME=$(imds tags/instance/aws:autoscaling:groupName)"
    echo "AWS_REGION=$AWS_REGION"
  } >> "$ENVF"
  units="blackwidow-spawn blackwidow-load-metric.timer"
fi
chgrp blackwidow "$ENVF"; chmod 0640 "$ENVF"

cp "$APP"/ops/aws/systemd/*.service "$APP"/ops/aws/systemd/*.timer /etc/systemd/system/
systemctl daemon-reload
# shellcheck disable=SC2086
systemctl enable --now $units
