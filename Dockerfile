# Word Factory, hosted: gunicorn with the repo's configuration (one worker,
# many threads). Recorded runs live in /data: mount a volume to keep them.
FROM python:3.11-slim
WORKDIR /srv/word-factory
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY app app
COPY engine engine
COPY static static
COPY templates templates
COPY gunicorn.conf.py .
RUN useradd --system --home-dir /nonexistent factory && mkdir /data && chown factory /data
USER factory
ENV WF_HOST=0.0.0.0 WF_PORT=8000 WF_RUNS_DB=/data/runs.sqlite3
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
CMD ["gunicorn", "-c", "gunicorn.conf.py"]
