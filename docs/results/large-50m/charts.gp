# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "GET" 30.69 49.01 25.1999 104.9
"twemproxy" "pipelined GET" 11.66 13.5 5.12971 30.2897
"cluster" "GET" 24.16 0 24.904 49.064
"cluster" "pipelined GET" 7.14 0 2.83757 9.97757
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "GET" 31067.3 31067.3 31067.3 2957.31 2957.31 2957.31 14245634
"twemproxy" "pipelined GET" 97337.7 97337.7 97337.7 4702.21 4702.21 4702.21 14245634
"cluster" "GET" 71219.4 71219.4 71219.4 3448.83 3448.83 3448.83 1810039
"cluster" "pipelined GET" 330572 330572 330572 3973.12 3973.12 3973.12 1810039
EOD

$lat0 << EOD
-0 23.71
0.25 123.648
0.5 225.792
0.75 379.904
1 600.064
1.25 915.456
1.5 1355.78
1.75 2068.48
2 2957.31
2.25 3776.51
2.5 4505.6
2.75 5193.73
3 6111.23
3.25 7651.33
3.5 9535.49
3.75 11894.8
4 14647.3
4.25 17891.3
4.5 21692.4
4.75 26279.9
5 29294.6
5.25 32178.2
5.5 35258.4
5.75 39714.8
6 41287.7
6.25 42336.3
EOD
$lat1 << EOD
-0 38.515
0.25 538.624
0.5 845.824
0.75 1159.17
1 1609.73
1.25 2351.1
1.5 3219.46
1.75 4055.04
2 4702.21
2.25 5259.26
2.5 5750.78
2.75 6373.38
3 7192.58
3.25 8486.91
3.5 9404.42
3.75 10846.2
4 12222.5
4.25 13926.4
4.5 15564.8
4.75 17629.2
5 19464.2
5.25 19595.3
5.5 19848.4
5.75 19848.4
6 19848.4
6.25 19848.4
EOD
$lat2 << EOD
-0 12.714
0.25 349.184
0.5 550.912
0.75 718.848
1 915.456
1.25 1282.05
1.5 2019.33
1.75 2760.7
2 3448.83
2.25 4005.89
2.5 4505.6
2.75 5062.66
3 5652.48
3.25 6242.3
3.5 6864.9
3.75 7749.63
4 8421.38
4.25 9928.7
4.5 10977.3
4.75 12681.2
5 16089.1
5.25 16351.2
5.5 19726.3
5.75 20906
6 21037.1
6.25 21037.1
EOD
$lat3 << EOD
-0 12.997
0.25 845.824
0.5 1306.62
0.75 1699.84
1 2084.86
1.25 2514.94
1.5 2957.31
1.75 3448.83
2 3973.12
2.25 4571.14
2.5 5062.66
2.75 5914.62
3 8208.38
3.25 12288
3.5 12550.1
3.75 12681.2
4 12877.8
4.25 14712.8
4.5 16416.8
4.75 16547.8
5 16547.8
5.25 16597.7
5.5 16597.7
5.75 16597.7
6 16597.7
6.25 16597.7
EOD

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'cpu.png'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'throughput_p99.png'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:3.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'latency.png'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:7]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'cpu.svg'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'throughput_p99.svg'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:3.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'latency.svg'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:7]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output
